"""The lsp tool's parts that need no server: positions, symbol cleaning and occurrences, symbol
trees, WorkspaceEdit application, the declaration, the display and the start-up warnings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mm_tui.config import LspServer, Settings
from mm_tui.tools.base import ToolContext
from mm_tui.tools.lsp import LspArgs, LspTool
from mm_tui.tools.lsp.edits import EditError, apply_text_edits, count_changes, plan, text_edits
from mm_tui.tools.lsp.positions import Document, char_to_utf16, split_lines, utf16_to_char
from mm_tui.tools.lsp.symbols import (
    CODE,
    COMMENT,
    STRING,
    clean_symbol,
    format_symbols,
    occurrences,
    split_rename,
    symbol_from_words,
    symbol_tree,
)
from mm_tui.tools.registry import ToolRegistry

GOPLS = LspServer(name="gopls", command="gopls", extensions=[".go"])
PYRIGHT = LspServer(
    name="pyright", command="pyright-langserver", args=["--stdio"], extensions=[".py", ".pyi"]
)


def rng(l1: int, c1: int, l2: int, c2: int) -> dict:
    return {"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}}


# --- positions -----------------------------------------------------------------------------------


def test_utf16_columns_around_emoji_and_accents() -> None:
    line = 'label = "héllo 👋 wörld" + str(count)'
    column = line.index("count")  # 30 characters before it, one of them an emoji
    assert char_to_utf16(line, column) == column + 1
    assert utf16_to_char(line, column + 1) == column
    assert char_to_utf16("é" * 5, 5) == 5  # accented letters are one unit each
    assert utf16_to_char("👋x", 1) == 1  # inside a surrogate pair: the next character
    assert utf16_to_char("ab", 99) == 2


@given(st.text(), st.integers(min_value=0, max_value=200))
def test_utf16_round_trip(line: str, column: int) -> None:
    line = line.replace("\n", "").replace("\r", "")
    column = min(column, len(line))
    assert utf16_to_char(line, char_to_utf16(line, column)) == column


def test_lines_split_as_the_protocol_splits_them() -> None:
    assert split_lines("a\r\nb\rc\nd\x0ce\u2028f") == ["a", "b", "c", "d\x0ce\u2028f"]
    assert Document("a\nb\n").line_count == 2
    assert Document("a\nb").line_count == 2
    assert Document("").line_count == 1


def test_document_offsets() -> None:
    doc = Document("é👋x\r\nsecond\n")
    assert doc.offset({"line": 0, "character": 3}) == 2  # after é and 👋 (three units)
    assert doc.offset({"line": 1, "character": 0}) == 5  # the \r\n is two characters
    assert doc.offset({"line": 1, "character": 99}) == 11
    assert doc.offset({"line": 9, "character": 0}) == len(doc.text)
    assert doc.from_wire({"line": 0, "character": 3}) == (0, 2)
    assert doc.to_wire(0, 2) == {"line": 0, "character": 3}


# --- symbols -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("Greet", "Greet"),
        ("`Greet', ", "Greet"),
        ('"Greet"', "Greet"),
        ("person.Greet", "Greet"),
        ("fmt.Println()", "Println"),
        ("self.name,", "name"),
        ("std::vector<int>", "vector"),
        ("obj->field;", "field"),
        ("greet(name)", "greet"),
        ("$el", "$el"),
        ("wörd_count", "wörd_count"),
        ("...", ""),
    ],
)
def test_clean_symbol(raw: str, clean: str) -> None:
    assert clean_symbol(raw) == clean


def test_several_words() -> None:
    assert split_rename("Greet 1 12 Hello") == ("Greet", "Hello", [1, 12])
    assert split_rename("person.Greet → Hello") == ("Greet", "Hello", [])
    assert split_rename("Greet") == ("Greet", "", [])
    assert symbol_from_words("func greet") == "greet"
    assert symbol_from_words("Greet 1 12") == "Greet"


def test_occurrences_code_then_strings_then_comments() -> None:
    lines = [
        '#include "greet.h"',
        "// greet someone",
        "int main(void) { return greet(1); } /* greet */",
        'const char *s = "greet"; int greeting = greet(2);',
    ]
    found = occurrences(lines, "greet", ".c")
    assert [(o.line, o.column, o.where) for o in found] == [
        (2, lines[2].index("greet("), CODE),
        (3, lines[3].index("greet("), CODE),
        (0, 10, STRING),
        (3, 17, STRING),
        (1, 3, COMMENT),
        (2, lines[2].index("greet */"), COMMENT),
    ]
    on_line = occurrences(lines, "greet", ".c", 3)
    assert [(o.line, o.column) for o in on_line] == [(3, lines[3].index("greet(")), (3, 17)]


def test_occurrences_python_comments_and_docstrings() -> None:
    lines = [
        "# make_person is below",
        "def make_person():",
        '    """make_person builds',
        '    a person; make_person again"""',
        "    return make_person  # make_person",
    ]
    found = occurrences(lines, "make_person", ".py")
    assert [(o.line, o.where) for o in found] == [
        (1, CODE),
        (4, CODE),
        (2, STRING),
        (3, STRING),
        (0, COMMENT),
        (4, COMMENT),
    ]


def test_hash_is_code_in_c_and_a_comment_in_python() -> None:
    assert occurrences(["#define X 1"], "X", ".c")[0].where == CODE
    assert occurrences(["#define X 1"], "X", ".py")[0].where == COMMENT


def test_document_symbol_tree() -> None:
    result = [
        {
            "name": "Person",
            "kind": 5,
            "range": rng(3, 0, 12, 0),
            "selectionRange": rng(3, 6, 3, 12),
            "children": [
                {
                    "name": "greet",
                    "kind": 6,
                    "detail": "def greet(self)",
                    "range": rng(9, 4, 11, 0),
                    "selectionRange": rng(9, 8, 9, 13),
                },
                {
                    "name": "__init__",
                    "kind": 9,
                    "range": rng(6, 4, 8, 0),
                    "selectionRange": rng(6, 8, 6, 16),
                },
            ],
        },
        {"name": "main", "kind": 12, "range": rng(0, 0, 1, 0), "selectionRange": rng(0, 4, 0, 8)},
    ]
    assert format_symbols(symbol_tree(result)) == [
        "function main  line 1",
        "class Person  line 4",
        "  constructor __init__  line 7",
        "  method greet  [def greet(self)]  line 10",
    ]


def test_symbol_information_list_is_nested() -> None:
    def info(name: str, kind: int, r: dict, container: str = "") -> dict:
        out = {"name": name, "kind": kind, "location": {"uri": "file:///x.py", "range": r}}
        if container:
            out["containerName"] = container
        return out

    result = [
        info("helper", 12, rng(20, 0, 22, 0)),
        info("Person", 5, rng(3, 0, 12, 0)),
        info("greet", 6, rng(9, 4, 11, 0), "Person"),
        info("name", 13, rng(10, 8, 10, 12), "greet"),
        info("VERSION", 14, rng(0, 0, 0, 11)),
    ]
    assert format_symbols(symbol_tree(result)) == [
        "constant VERSION  line 1",
        "class Person  line 4",
        "  method greet  line 10",
        "    variable name  line 11",
        "function helper  line 21",
    ]
    assert format_symbols(symbol_tree(None)) == []


# --- edits ---------------------------------------------------------------------------------------


def test_apply_text_edits_with_utf16_ranges() -> None:
    text = 'msg = "👋"; greet(x)\ngreet(y)\n'
    edits = [
        {"range": rng(1, 0, 1, 5), "newText": "hello"},
        {"range": rng(0, 12, 0, 17), "newText": "hello"},  # after an emoji: 12 units, 11 chars
    ]
    assert apply_text_edits(text, edits) == 'msg = "👋"; hello(x)\nhello(y)\n'
    inserts = [
        {"range": rng(0, 0, 0, 0), "newText": "a"},
        {"range": rng(0, 0, 0, 0), "newText": "b"},
    ]
    assert apply_text_edits("x", inserts) == "abx"  # same place: the server's order
    with pytest.raises(EditError):
        apply_text_edits("abcdef", [{"range": rng(0, 0, 0, 4)}, {"range": rng(0, 2, 0, 5)}])


def test_changes_and_document_changes(tmp_path: Path) -> None:
    a = tmp_path / "a.py"
    b = tmp_path / "b.py"
    files = {a: "def greet():\n    pass\n", b: "from a import greet\ngreet()\n"}
    edit = {"range": rng(0, 4, 0, 9), "newText": "hello"}
    by_changes = {
        "changes": {
            a.as_uri(): [edit],
            b.as_uri(): [
                {"range": rng(0, 14, 0, 19), "newText": "hello"},
                {"range": rng(1, 0, 1, 5), "newText": "hello"},
            ],
        }
    }
    by_document_changes = {
        "documentChanges": [
            {"textDocument": {"uri": a.as_uri(), "version": 1}, "edits": [edit]},
            {
                "textDocument": {"uri": b.as_uri(), "version": None},
                "edits": by_changes["changes"][b.as_uri()],
            },
        ],
        "changes": {"file:///ignored.py": []},  # documentChanges wins
    }
    for workspace_edit in (by_changes, by_document_changes):
        changes = plan(workspace_edit, files.__getitem__)
        assert [(c.path, c.edits) for c in changes] == [(a, 1), (b, 2)]
        assert changes[1].new == "from a import hello\nhello()\n"
    assert set(text_edits(by_document_changes)) == {a, b}
    with pytest.raises(EditError):
        text_edits({"documentChanges": [{"kind": "create", "uri": a.as_uri()}]})


def test_whole_file_edit_counts_the_places_that_changed(tmp_path: Path) -> None:
    """pylsp answers a rename with one edit replacing the whole file."""
    a = tmp_path / "a.py"
    old = "def greet():\n    pass\n\n\ngreet()\nx = greet\ngreeting = 1\n"
    new = old.replace("greet()", "hello()").replace("x = greet", "x = hello")
    new = new.replace("def greet", "def hello")
    edit = {"documentChanges": [{"textDocument": {"uri": a.as_uri()}, "edits": [
        {"range": rng(0, 0, 7, 0), "newText": new}
    ]}]}  # fmt: skip
    (change,) = plan(edit, lambda path: old)
    assert change.new == new
    assert change.edits == 3
    assert count_changes("a b c", "a b c") == 0
    assert count_changes("greet(greet)", "hello(hello)") == 2


# --- the tool without a server -------------------------------------------------------------------


def test_declaration_and_description(tmp_path: Path) -> None:
    tool = LspTool([GOPLS, PYRIGHT], tmp_path)
    assert tool.name == "lsp"
    assert tool.counter == "lsp_calls"
    description = tool.description()
    assert "Servers available: gopls (.go), pyright (.py, .pyi)" in description
    for action in ("definition", "references", "hover", "symbols", "diagnostics", "rename"):
        assert action in description
    params = tool.parameters()
    assert params["required"] == ["action", "path"]
    assert params["properties"]["action"]["enum"] == [
        "definition",
        "references",
        "hover",
        "symbols",
        "diagnostics",
        "rename",
    ]
    assert set(params["properties"]) == {"action", "path", "symbol", "line", "column", "new_name"}


def test_display_kind_and_permission(tmp_path: Path) -> None:
    tool = LspTool([GOPLS], tmp_path)
    ctx = ToolContext(cwd=tmp_path, settings=Settings())
    definition = LspArgs(action="definition", path="main.go", symbol="greet")
    at = LspArgs(action="definition", path="main.go", line=9, column=14)
    rename = LspArgs(action="rename", path="main.go", symbol="greet", new_name="hello")
    packed = LspArgs(action="rename", path="main.go", symbol="Greet 1 12 Hello")
    assert tool.display(definition) == "🔎 lsp: definition main.go greet"
    assert tool.display(at) == "🔎 lsp: definition main.go:9:14"
    assert tool.display(rename) == "🔎 lsp: rename main.go greet → hello"
    assert tool.display(packed) == "🔎 lsp: rename main.go Greet → Hello"
    assert tool.display(LspArgs(action="symbols", path="main.go")) == "🔎 lsp: symbols main.go"
    assert tool.title(definition) == "definition main.go greet"
    assert tool.kind_for(definition) == "read"
    assert tool.kind_for(rename) == "edit"
    assert tool.needs_permission(definition) is False
    assert tool.needs_permission(rename) is True
    assert tool.rejection() == "[rename rejected by the user]"
    assert tool.locations(definition, ctx) == (str(tmp_path / "main.go"),)


async def test_failures_before_any_server(tmp_path: Path) -> None:
    tool = LspTool([GOPLS], tmp_path)
    ctx = ToolContext(cwd=tmp_path, settings=Settings())
    (tmp_path / "main.go").write_text("package main\n\nfunc greet() {}\n")

    async def run(**fields) -> str:
        result = await tool.run(LspArgs(**fields), ctx)
        assert result.status == "error"
        return result.output

    assert await run(action="hover", path="x.md", symbol="a") == (
        '[lsp: no language server for "x.md" — configured: gopls (.go)]'
    )
    assert await run(action="hover", path="gone.go", symbol="a") == "[lsp: gone.go does not exist]"
    os.mkfifo(tmp_path / "pipe.go")  # reading it would block for ever
    assert await run(action="hover", path="pipe.go", symbol="a") == (
        "[lsp: pipe.go is not a regular file (a device, socket or pipe)]"
    )
    (tmp_path / "dir.go").mkdir()
    assert await run(action="hover", path="dir.go", symbol="a") == (
        "[lsp: dir.go is a directory, not a file]"
    )
    # a position that cannot be right is refused before any server is started
    assert await run(action="hover", path="main.go", symbol="foo") == (
        '[lsp: "foo" not found in main.go]'
    )
    assert await run(action="hover", path="main.go", line=3, column=40) == (
        "[lsp: column 40 is past the end of line 3 (15 characters)]"
    )
    assert await run(action="definition", path="main.go", line=4, column=1) == (
        "[lsp: line 4 is past the end of main.go (3 lines)]"
    )
    assert await run(action="jump", path="main.go") == (
        '[lsp: unknown action "jump" — use definition, references, hover, symbols, '
        "diagnostics or rename]"
    )
    assert await run(action="rename", path="main.go", symbol="greet") == (
        '[lsp: rename needs new_name — call lsp again with {"action": "rename", "path": '
        '"main.go", "symbol": "greet", "new_name": "<the new identifier>"}; do not use '
        "edit_file for a rename]"
    )
    assert await run(action="rename", path="main.go", symbol="greet", new_name="greet") == (
        '[lsp: the new name is the same as the symbol "greet": nothing to rename]'
    )
    assert tool.manager.running() == []  # none of these needed the server


def test_from_settings_warns_about_missing_servers(tmp_path: Path) -> None:
    missing = LspServer(name="nothere", command="mm-no-such-language-server", extensions=[".x"])
    settings = Settings.model_validate({"lsp": {"servers": [missing.model_dump()]}})
    tool, warnings = LspTool.from_settings(settings, tmp_path)
    assert tool is None
    assert warnings[0] == (
        "[warning: lsp server nothere (mm-no-such-language-server) not found on the PATH — skipped]"
    )
    registry = ToolRegistry.from_settings(settings, tmp_path)
    assert "lsp" not in registry.names
    assert registry.warnings == warnings
