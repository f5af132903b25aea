"""The edit_file tool on real files: the passes, the refusals, files as people have them."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.engine import make_engine
from support.scripted_model import ScriptedModel, call, say

from mm_tui.config import Settings
from mm_tui.core.events import Decision, PermissionRequested, ToolCallFinished
from mm_tui.engine.demo import DemoModel
from mm_tui.engine.playground import make_playground
from mm_tui.tools.args import EditFileArgs
from mm_tui.tools.base import NothingToAsk, ToolContext, ToolResult
from mm_tui.tools.edit_file import EditFileTool
from mm_tui.tools.registry import ToolRegistry

AMBIGUITY_ADVICE = (
    "to change ONE of them, include its surrounding lines in old until the text is unique; "
    "to change several, send one edit per place…"
)
NOT_FOUND = (
    "old text not found — it must match the file exactly, including indentation and line breaks:"
)
SAME_TEXT = (
    "every edit is resolved against the original file, so no two may change the same text: "
    "merge them into one edit"
)
ALL_OR_NOTHING = "nothing was written: the edits are applied all together or not at all"

MAIN_GO = "package main\n\nfunc main() {\n\tcount := 1\n\tprint(count)\n}\n"


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, settings=Settings())


async def edit(ctx: ToolContext, path: str, *pairs: tuple[str, str], dry_run: bool = False):
    args = EditFileArgs(path=path, edits=[{"old": o, "new": n} for o, n in pairs], dry_run=dry_run)
    return await EditFileTool().run(args, ctx)


def put(tmp_path: Path, name: str, content: str | bytes) -> Path:
    target = tmp_path / name
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_bytes(content.encode())
    os.utime(target, (1_000_000, 1_000_000))
    return target


def untouched(target: Path, content: str | bytes) -> bool:
    data = content if isinstance(content, bytes) else content.encode()
    return target.read_bytes() == data and target.stat().st_mtime == 1_000_000


# --- declaration ---------------------------------------------------------------------------


def test_declaration(ctx: ToolContext, tmp_path: Path) -> None:
    tool = EditFileTool()
    args = EditFileArgs(path="src/a.go", edits=[{"old": "a", "new": "b"}])
    assert tool.name == "edit_file"
    assert tool.kind == "edit"
    assert tool.counter == "file_ops"
    assert tool.title(args) == "src/a.go"
    assert tool.display(args) == "✏️ edit_file: src/a.go"
    assert tool.needs_permission(args) is True
    assert tool.needs_permission(args.model_copy(update={"dry_run": True})) is False
    assert tool.rejection() == "[edit_file rejected by the user]"
    assert tool.locations(args, ctx) == (str(tmp_path / "src/a.go"),)
    assert args.dry_run is False
    params = tool.parameters()
    assert "$defs" not in params and "$ref" not in str(params)
    assert params["required"] == ["path", "edits"]
    item = params["properties"]["edits"]["items"]
    assert item["required"] == ["old", "new"]
    assert set(params["properties"]) == {"path", "edits", "dry_run"}
    assert all(p["description"] for p in params["properties"].values())
    assert all(p["description"] for p in item["properties"].values())


def test_a_newline_written_raw_inside_a_string_is_a_newline() -> None:
    """Small models write a file's lines into a JSON string without escaping them."""
    registry = ToolRegistry([EditFileTool()])
    raw = '{"path": "f", "edits": [{"old": "a\n\tb", "new": "c\nd"}]}'  # the real characters
    parsed = registry.parse("edit_file", raw)
    assert not isinstance(parsed, str), parsed
    assert (parsed[1].edits[0].old, parsed[1].edits[0].new) == ("a\n\tb", "c\nd")


def test_edits_sent_as_a_json_string_are_read(tmp_path: Path) -> None:
    registry = ToolRegistry([EditFileTool()])
    parsed = registry.parse(
        "edit_file", '{"path": "f", "edits": "[{\\"old\\": \\"a\\", \\"new\\": \\"b\\"}]"}'
    )
    assert not isinstance(parsed, str)
    assert parsed[1].edits[0].old == "a"
    refused = registry.parse("edit_file", '{"path": "f", "edits": "not json"}')
    assert isinstance(refused, str) and 'field "edits"' in refused


def test_declared_with_the_edit_tools(tmp_path: Path) -> None:
    names = ToolRegistry.from_settings(Settings(), tmp_path).names
    assert names.index("edit_file") == names.index("write_file") + 1
    off = Settings.model_validate({"editTools": False})
    assert "edit_file" not in ToolRegistry.from_settings(off, tmp_path).names


# --- the example of the reference (docs/tools.md) --------------------------------------------


async def test_reference_example_not_found_to_the_letter(ctx: ToolContext, tmp_path: Path) -> None:
    target = put(tmp_path, "main.go", MAIN_GO)
    old = "func main() {\n    count := 2\n    print(count)\n}"
    result = await edit(ctx, "main.go", (old, "func main() {}"))
    assert result.status == "error"
    assert result.diff is None
    assert result.output == (
        "main.go: edit #1: old text not found — it must match the file exactly, including "
        "indentation and line breaks:\n"
        "  │ func main() {\n"
        "  │     count := 2\n"
        "  │     print(count)\n"
        "  │ }\n"
        "the closest the file comes to it — copy these lines:\n"
        "  │ 3 │ func main() {\n"
        "  │ 4 │ \tcount := 1\n"
        "  │ 5 │ \tprint(count)\n"
        "  │ 6 │ }"
    )
    assert untouched(target, MAIN_GO)


async def test_reference_example_retyped_with_spaces_lands_with_tabs(
    ctx: ToolContext, tmp_path: Path
) -> None:
    target = put(tmp_path, "main.go", MAIN_GO)
    old = "func main() {\n    count := 1\n    print(count)\n}\n"
    new = "func main() {\n    count := 2\n    if count > 1 {\n        print(count)\n    }\n}\n"
    result = await edit(ctx, "main.go", (old, new))
    assert result.status == "ok"
    assert target.read_text() == (
        "package main\n\nfunc main() {\n\tcount := 2\n\tif count > 1 {\n\t\tprint(count)\n\t}\n}\n"
    )
    assert result.output == (
        "edited main.go: 1 edit applied, +4 -2 lines, first changed line 4 · 1 matched ignoring "
        "whitespace\n"
        "@@ -1,6 +1,8 @@\n"
        "1   │ package main\n"
        "2   │ \n"
        "3   │ func main() {\n"
        "4 - │ \tcount := 1\n"
        "5 - │ \tprint(count)\n"
        "4 + │ \tcount := 2\n"
        "5 + │ \tif count > 1 {\n"
        "6 + │ \t\tprint(count)\n"
        "7 + │ \t}\n"
        "8   │ }"
    )
    assert result.diff == (
        "--- a/main.go\n+++ b/main.go\n@@ -1,6 +1,8 @@\n package main\n \n func main() {\n"
        "-\tcount := 1\n-\tprint(count)\n+\tcount := 2\n+\tif count > 1 {\n+\t\tprint(count)\n"
        "+\t}\n }\n"
    )


# --- exact pass, headline, all against the original -------------------------------------------


async def test_exact_edit_headline_and_diff(ctx: ToolContext, tmp_path: Path) -> None:
    target = put(tmp_path, "f.txt", "a\nb\nc\nd\n")
    result = await edit(ctx, "f.txt", ("b\n", "B\nB2\n"))
    assert target.read_text() == "a\nB\nB2\nc\nd\n"
    assert result.output == (
        "edited f.txt: 1 edit applied, +2 -1 lines, first changed line 2\n"
        "@@ -1,4 +1,5 @@\n1   │ a\n2 - │ b\n2 + │ B\n3 + │ B2\n4   │ c\n5   │ d"
    )
    assert result.diff == "--- a/f.txt\n+++ b/f.txt\n@@ -1,4 +1,5 @@\n a\n-b\n+B\n+B2\n c\n d\n"


async def test_edits_resolve_against_the_original_never_in_cascade(
    ctx: ToolContext, tmp_path: Path
) -> None:
    target = put(tmp_path, "f.txt", "one\ntwo\n")
    result = await edit(ctx, "f.txt", ("one", "two"), ("two", "three"))
    assert result.status == "ok"
    assert target.read_text() == "two\nthree\n"
    assert result.output.startswith("edited f.txt: 2 edits applied, +2 -2 lines, first changed")


async def test_empty_new_deletes(ctx: ToolContext, tmp_path: Path) -> None:
    target = put(tmp_path, "f.txt", "keep\ndrop\nkeep too\n")
    result = await edit(ctx, "f.txt", ("drop\n", ""))
    assert target.read_text() == "keep\nkeep too\n"
    assert result.output.startswith(
        "edited f.txt: 1 edit applied, +0 -1 lines, first changed line 2"
    )


async def test_edits_in_any_order_on_one_line(ctx: ToolContext, tmp_path: Path) -> None:
    target = put(tmp_path, "f.txt", "alpha beta gamma\n")
    result = await edit(ctx, "f.txt", ("gamma", "G"), ("alpha", "A"))
    assert target.read_text() == "A beta G\n"
    assert "+1 -1 lines, first changed line 1" in result.output


async def test_dry_run_writes_nothing(ctx: ToolContext, tmp_path: Path) -> None:
    target = put(tmp_path, "f.txt", "a\nb\n")
    result = await edit(ctx, "f.txt", ("b", "c"), dry_run=True)
    assert untouched(target, "a\nb\n")
    assert result.status == "ok"
    assert result.diff is None
    assert result.output == (
        "dry run, nothing written — f.txt: 1 edit would apply, +1 -1 lines, first changed line "
        "2\n@@ -1,2 +1,2 @@\n1   │ a\n2 - │ b\n2 + │ c"
    )


async def test_an_edit_that_changes_nothing(ctx: ToolContext, tmp_path: Path) -> None:
    target = put(tmp_path, "f.txt", "a\nb\n")
    result = await edit(ctx, "f.txt", ("b", "b"))
    assert result.output == "f.txt unchanged: the edits change nothing"
    assert result.status == "ok"
    assert untouched(target, "a\nb\n")


async def test_permission_details_is_the_diff_or_nothing_to_ask(
    ctx: ToolContext, tmp_path: Path
) -> None:
    target = put(tmp_path, "f.txt", "a\nb\n")
    tool = EditFileTool()
    args = EditFileArgs(path="f.txt", edits=[{"old": "b", "new": "c"}])
    assert await tool.permission_details(args, ctx) == (
        "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
    )
    for cannot in (
        EditFileArgs(path="f.txt", edits=[{"old": "zzz", "new": "c"}]),  # refused
        EditFileArgs(path="f.txt", edits=[{"old": "b", "new": "b"}]),  # changes nothing
        EditFileArgs(path="missing.txt", edits=[{"old": "b", "new": "c"}]),
    ):
        with pytest.raises(NothingToAsk):
            await tool.permission_details(cannot, ctx)
    assert untouched(target, "a\nb\n")


async def test_an_edit_whose_preview_fails_is_not_asked(tmp_path: Path) -> None:
    """The model gets the failure the preview met; nobody is asked to approve nothing."""
    target = put(tmp_path, "f.txt", "a\nb\n")
    edits = [{"old": "zzz", "new": "c"}]
    model = ScriptedModel(call("edit_file", {"path": "f.txt", "edits": edits}), say("done"))
    engine = make_engine(tmp_path, model, yolo=False)
    events: list = []
    await engine.run_turn("go", events.append)
    assert not [e for e in events if isinstance(e, PermissionRequested)]
    (finished,) = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished.status == "error"
    assert finished.output == f"f.txt: edit #1: {NOT_FOUND}\n  │ zzz"
    assert model.requests[1][-1]["content"] == finished.output
    assert engine.permissions.standing() == {}  # nothing was decided
    assert untouched(target, "a\nb\n")


async def test_in_a_turn_the_permission_shows_the_diff(tmp_path: Path) -> None:
    target = put(tmp_path, "f.txt", "a\nb\n")
    edits = [{"old": "b", "new": "c"}]
    model = ScriptedModel(call("edit_file", {"path": "f.txt", "edits": edits}), say("done"))
    engine = make_engine(tmp_path, model, yolo=False)
    events: list = []

    def emit(event) -> None:
        events.append(event)
        if isinstance(event, PermissionRequested):
            engine.answer(event.agent, event.call_id, Decision.ALLOW_ONCE)

    await engine.run_turn("go", emit)
    unified = "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
    asked = [e for e in events if isinstance(e, PermissionRequested)]
    assert [(e.tool, e.title, e.details) for e in asked] == [
        ("edit_file", "edit_file  f.txt", unified)
    ]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished[0].diff == unified and finished[0].status == "ok"
    assert target.read_text() == "a\nc\n"


async def test_the_demo_fixes_its_typo_with_edit_file(tmp_path: Path) -> None:
    folder = make_playground(tmp_path)
    engine = make_engine(folder, DemoModel(delay=0), sessions=tmp_path / "s")
    events: list = []
    await engine.run_turn("fix the typo", events.append)
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished[0].tool == "edit_file"
    assert finished[0].output.startswith("edited greet.py: 1 edit applied, +1 -1 lines")
    assert "Hello, {name}!" in (folder / "greet.py").read_text()


# --- pass 2: edges -------------------------------------------------------------------------

EDGES = [
    # (file, old, new, expected file)
    pytest.param(
        "def f():\n\treturn 1\n",
        "  return 1",
        "  return 2",
        "def f():\n\treturn 2\n",
        id="single-line indent the model kept",
    ),
    pytest.param(
        "x = 1\ny = 2\n", "\nx = 1\n", "\nx = 10\n", "x = 10\ny = 2\n", id="leading newline"
    ),
    pytest.param("a\nlast", "last\n", "LAST\n", "a\nLAST", id="trailing newline at EOF"),
    pytest.param(
        "b\nc\n", "\nb\n", "\nb\n\nb2\n", "b\n\nb2\nc\n", id="new deliberately adds a blank"
    ),
    pytest.param("a\nb", "b\n", "B", "a\nB", id="new without the padding"),
    pytest.param("f(a, b)\n", " a, ", " x, ", "f(x, b)\n", id="spaces inside a line"),
    pytest.param(
        "if x:\n\tcall()\n",
        "    call()",
        "    call()\n    other()",
        "if x:\n\tcall()\n\tother()\n",
        id="new lines re-indented to the file's tab",
    ),
    pytest.param(
        "if x:\n\tcall()\n",
        "    call()",
        "        deeper()",
        "if x:\n\t\tdeeper()\n",
        id="new's own extra indent converted to the file's unit",
    ),
    pytest.param(
        "a\n\tgone()\nb\n", "  gone()", "", "a\nb\n", id="deleting a whole line takes its break"
    ),
]


@pytest.mark.parametrize(("content", "old", "new", "expected"), EDGES)
async def test_edges_pass(
    ctx: ToolContext, tmp_path: Path, content: str, old: str, new: str, expected: str
) -> None:
    target = put(tmp_path, "f.txt", content)
    result = await edit(ctx, "f.txt", (old, new))
    assert result.status == "ok", result.output
    assert target.read_text() == expected
    assert result.output.split("\n")[0].endswith(" · 1 matched ignoring whitespace")


# --- pass 3: indent ------------------------------------------------------------------------

INDENT = [
    pytest.param(
        "class A:\n    def f(self):\n        return 1\n",
        "def f(self):\n  return 1",
        "def f(self):\n  x = 1\n  return x",
        "class A:\n    def f(self):\n        x = 1\n        return x\n",
        id="two-space model, four-space file",
    ),
    pytest.param(
        "func f() {\n\tif a {\n\t\tb()\n\t}\n}\n",
        "    if a {\n        b()\n    }",
        "    if a {\n        b()\n        c()\n    }",
        "func f() {\n\tif a {\n\t\tb()\n\t\tc()\n\t}\n}\n",
        id="spaces model, tab file",
    ),
    pytest.param(
        "def f():\n    a = 1\n    return a\n",
        "\ta = 1\n\treturn a",
        "\ta = 2\n\tif a:\n\t\treturn a",
        "def f():\n    a = 2\n    if a:\n        return a\n",
        id="tab model, spaces file",
    ),
    pytest.param(
        "x = [\n    1,   \n    2,\n]\n",
        "x = [\n  1,\n  2,\n]",
        "x = [\n  1,\n\n  3,\n]",
        "x = [\n    1,\n\n    3,\n]\n",
        id="trailing whitespace forgiven, a blank line stays empty",
    ),
    pytest.param(
        "def f():\n    a()\n    b()\n    c()\n",
        "a()\nb()\n",
        "",
        "def f():\n    c()\n",
        id="deleting whole lines takes their breaks",
    ),
    pytest.param(
        "\tfirst\n\tsecond\n",
        "first\nsecond",
        "first\n    nested\nsecond",
        "\tfirst\n\t\tnested\n\tsecond\n",
        id="model dropped the base indent",
    ),
]


@pytest.mark.parametrize(("content", "old", "new", "expected"), INDENT)
async def test_indent_pass(
    ctx: ToolContext, tmp_path: Path, content: str, old: str, new: str, expected: str
) -> None:
    target = put(tmp_path, "f.txt", content)
    result = await edit(ctx, "f.txt", (old, new))
    assert result.status == "ok", result.output
    assert target.read_text() == expected
    assert result.output.split("\n")[0].endswith(" · 1 matched ignoring whitespace")


async def test_one_line_is_not_matched_by_indent(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, "f.txt", "a  b\n")
    result = await edit(ctx, "f.txt", ("a b", "c"))
    assert result.output == f"f.txt: edit #1: {NOT_FOUND}\n  │ a b"


async def test_the_first_pass_that_finds_anything_wins(ctx: ToolContext, tmp_path: Path) -> None:
    # verbatim once (spaces), loosely once more (tab): exact wins, no ambiguity
    content = "\tfoo()\n\tbar()\n--\n    foo()\n    bar()\n"
    target = put(tmp_path, "f.txt", content)
    result = await edit(ctx, "f.txt", ("    foo()\n    bar()", "    baz()"))
    assert target.read_text() == "\tfoo()\n\tbar()\n--\n    baz()\n"
    assert "matched ignoring whitespace" not in result.output
    # edges (the core, once) wins over indent
    content = "x:\n    foo()\n    bar()\n"
    target = put(tmp_path, "g.txt", content)
    result = await edit(ctx, "g.txt", ("\nfoo()\n    bar()\n", "\nqux()\n    bar()\n"))
    assert target.read_text() == "x:\n    qux()\n    bar()\n"


async def test_counts_only_the_relaxed_edits(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, "f.txt", "a\n\tb\nc\n")
    result = await edit(ctx, "f.txt", ("a", "A"), ("  b", "  B"), ("c\n\n", "C\n\n"))
    assert result.output.split("\n")[0] == (
        "edited f.txt: 3 edits applied, +3 -3 lines, first changed line 1 · 2 matched ignoring "
        "whitespace"
    )


# --- uniqueness ----------------------------------------------------------------------------


async def test_ambiguous_exact(ctx: ToolContext, tmp_path: Path) -> None:
    content = "".join(f"line {i}\n" if i not in (11, 20) else "dup()\n" for i in range(1, 25))
    target = put(tmp_path, "main.go", content)
    result = await edit(ctx, "main.go", ("dup()", "x"))
    assert result.status == "error"
    assert (
        result.output
        == f"main.go: edit #1: old text appears 2 times (lines 11, 20) — {AMBIGUITY_ADVICE}"
    )
    assert untouched(target, content)


async def test_ambiguous_loose_matches_are_refused_the_same_way(
    ctx: ToolContext, tmp_path: Path
) -> None:
    content = "a:\n\tx()\n\ty()\nb:\n  x()\n  y()\n"
    target = put(tmp_path, "f.txt", content)
    result = await edit(ctx, "f.txt", ("    x()\n    y()", "z()"))
    assert (
        result.output
        == f"f.txt: edit #1: old text appears 2 times (lines 2, 5) — {AMBIGUITY_ADVICE}"
    )
    result = await edit(ctx, "f.txt", ("   x()", "z()"))  # edges
    assert (
        result.output
        == f"f.txt: edit #1: old text appears 2 times (lines 2, 5) — {AMBIGUITY_ADVICE}"
    )
    assert untouched(target, content)


async def test_overlapping_occurrences_count(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, "f.txt", "aaa\n")
    result = await edit(ctx, "f.txt", ("aa", "b"))
    assert (
        result.output
        == f"f.txt: edit #1: old text appears 2 times (lines 1, 1) — {AMBIGUITY_ADVICE}"
    )


async def test_many_places_list_ten_lines(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, "f.txt", "x\n" * 12)
    result = await edit(ctx, "f.txt", ("x", "y"))
    assert result.output == (
        "f.txt: edit #1: old text appears 12 times (lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, …) — "
        + AMBIGUITY_ADVICE
    )


# --- not found and the closest region -------------------------------------------------------


async def test_closest_region_needs_half_the_lines(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, "f.py", "def f():\n    a = 1\n    b = 2\n    return a\n")
    # 2 of 4 non-blank lines line up: offered
    result = await edit(ctx, "f.py", ("def f():\n    a = 9\n    b = 9\n    return a\n", "x"))
    assert result.output.endswith(
        "the closest the file comes to it — copy these lines:\n"
        "  │ 1 │ def f():\n  │ 2 │     a = 1\n  │ 3 │     b = 2\n  │ 4 │     return a"
    )
    # 1 of 3: nothing offered, rather than an innocent part of the file
    old = "def g():\n    a = 1\n    c = 3"
    result = await edit(ctx, "f.py", (old, "x"))
    assert result.output == (
        f"f.py: edit #1: {NOT_FOUND}\n  │ def g():\n  │     a = 1\n  │     c = 3"
    )


async def test_closest_region_numbers_are_real_and_aligned(
    ctx: ToolContext, tmp_path: Path
) -> None:
    lines = [f"row {i}" for i in range(1, 13)]
    put(tmp_path, "f.txt", "\n".join(lines) + "\n")
    result = await edit(ctx, "f.txt", ("row 8\nrow 9\nrow X\nrow 11", "x"))
    assert result.output.endswith(
        "copy these lines:\n  │  8 │ row 8\n  │  9 │ row 9\n  │ 10 │ row 10\n  │ 11 │ row 11"
    )


# --- refusals: overlap, nest, repeat, empty --------------------------------------------------


async def test_overlapping_edits_refused(ctx: ToolContext, tmp_path: Path) -> None:
    content = "one\ntwo\nthree\nfour\n"
    target = put(tmp_path, "f.txt", content)
    result = await edit(ctx, "f.txt", ("one\ntwo", "1\n2"), ("two\nthree", "2\n3"))
    assert result.status == "error"
    assert result.output == (
        f"f.txt: edits #1 and #2 overlap (lines 1-2 and lines 2-3) — {SAME_TEXT}\n{ALL_OR_NOTHING}"
    )
    assert untouched(target, content)


async def test_nested_edits_refused(ctx: ToolContext, tmp_path: Path) -> None:
    content = "one\ntwo\nthree\nfour\n"
    target = put(tmp_path, "f.txt", content)
    result = await edit(ctx, "f.txt", ("wo", "WO"), ("one\ntwo\nthree", "x"))
    assert result.output == (
        f"f.txt: edit #1 lies inside edit #2 (line 2 within lines 1-3) — {SAME_TEXT}\n"
        f"{ALL_OR_NOTHING}"
    )
    assert untouched(target, content)


async def test_repeated_edits_refused(ctx: ToolContext, tmp_path: Path) -> None:
    content = "one\ntwo\n"
    target = put(tmp_path, "f.txt", content)
    result = await edit(ctx, "f.txt", ("two", "2"), ("one", "1"), ("  two", "deux"))
    assert result.output == (
        "f.txt: edits #1 and #3 change the same text (line 2) — send each change once\n"
        f"{ALL_OR_NOTHING}"
    )
    assert untouched(target, content)


async def test_one_refused_edit_means_nothing_is_written(ctx: ToolContext, tmp_path: Path) -> None:
    content = "alpha\nbeta\n"
    target = put(tmp_path, "f.txt", content)
    result = await edit(ctx, "f.txt", ("alpha", "A"), ("gamma", "G"), ("", "x"))
    assert result.output == (
        f"f.txt: edit #2: {NOT_FOUND}\n  │ gamma\n"
        "f.txt: edit #3: old text is empty — quote the text to replace; to add lines, quote the "
        "line next to them in old and repeat it in new\n"
        f"{ALL_OR_NOTHING}"
    )
    assert untouched(target, content)


async def test_no_edits(ctx: ToolContext, tmp_path: Path) -> None:
    target = put(tmp_path, "f.txt", "a\n")
    result = await edit(ctx, "f.txt")
    assert result.output == "f.txt: no edits — send at least one {old, new} pair"
    assert untouched(target, "a\n")


# --- files as people have them ----------------------------------------------------------------


async def test_missing_file_points_to_write_file(ctx: ToolContext, tmp_path: Path) -> None:
    result = await edit(ctx, "nope.txt", ("a", "b"))
    assert result.status == "error"
    assert result.output == "nope.txt does not exist. Create it with write_file"
    assert not (tmp_path / "nope.txt").exists()


async def test_binary_refused(ctx: ToolContext, tmp_path: Path) -> None:
    data = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"
    target = put(tmp_path, "img.png", data)
    result = await edit(ctx, "img.png", ("PNG", "GIF"))
    assert result.output == "img.png is a binary file (16 bytes); edit_file edits text files only"
    assert untouched(target, data)


async def test_not_utf8_refused(ctx: ToolContext, tmp_path: Path) -> None:
    data = "ok\ncafé\n".encode("latin-1")
    target = put(tmp_path, "l1.txt", data)
    result = await edit(ctx, "l1.txt", ("ok", "fine"))
    assert result.output == (
        "l1.txt is not UTF-8 text (invalid byte at line 2); edit_file edits UTF-8 text only"
    )
    assert untouched(target, data)


def too_large(path: str, size: int) -> str:
    return (
        f"{path} is too large to edit ({size} bytes; edit_file edits files up to 64 MiB) — "
        "change it with a command instead, or read_file a range"
    )


async def test_a_file_over_the_limit_is_refused(ctx: ToolContext, tmp_path: Path) -> None:
    # one byte over 64 MiB (test_a_50_mb_file edits one under it)
    data = b"first\n" + b"z" * ((64 << 20) - 6) + b"\n"
    target = put(tmp_path, "over.txt", data)
    result = await edit(ctx, "over.txt", ("first", "1st"))
    assert result.output == too_large("over.txt", (64 << 20) + 1)
    assert result.status == "error"
    assert untouched(target, data)


async def test_a_huge_sparse_file_is_refused_without_being_read(
    ctx: ToolContext, tmp_path: Path
) -> None:
    # a few gigabytes that cost no disk: reading them whole took as much memory
    target = tmp_path / "huge.log"
    target.write_bytes(b"start\n")
    os.truncate(target, 5 << 30)
    result = await edit(ctx, "huge.log", ("start", "begin"), dry_run=True)
    assert result.output == too_large("huge.log", 5 << 30)
    args = EditFileArgs(path="huge.log", edits=[{"old": "start", "new": "begin"}])
    with pytest.raises(NothingToAsk):
        await EditFileTool().permission_details(args, ctx)
    assert target.stat().st_size == 5 << 30


async def test_directory_refused(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    result = await edit(ctx, "d", ("a", "b"))
    assert result.output == "d is a directory, not a file"


@pytest.mark.parametrize("line_break", ["\r\n", "\n"], ids=["model-crlf", "model-lf"])
async def test_crlf_kept_crlf(ctx: ToolContext, tmp_path: Path, line_break: str) -> None:
    content = b"a\r\n\tb\r\nc\r\n"
    target = put(tmp_path, "w.txt", content)
    old = line_break.join(["a", "    b"])
    new = line_break.join(["a", "    b", "    b2"])
    result = await edit(ctx, "w.txt", (old, new))
    assert result.status == "ok", result.output
    assert target.read_bytes() == b"a\r\n\tb\r\n\tb2\r\nc\r\n"
    assert "\r" not in result.output and "\r" not in (result.diff or "")


async def test_crlf_exact(ctx: ToolContext, tmp_path: Path) -> None:
    target = put(tmp_path, "w.txt", b"x\r\ny\r\n")
    await edit(ctx, "w.txt", ("x\ny\n", "x\nz\nw\n"))
    assert target.read_bytes() == b"x\r\nz\r\nw\r\n"


async def test_mixed_line_endings_left_as_they_are(ctx: ToolContext, tmp_path: Path) -> None:
    target = put(tmp_path, "m.txt", b"a\r\nb\nc\r\n")
    await edit(ctx, "m.txt", ("b", "B"))
    assert target.read_bytes() == b"a\r\nB\nc\r\n"


async def test_no_final_newline_kept(ctx: ToolContext, tmp_path: Path) -> None:
    target = put(tmp_path, "f.txt", "a\nb")
    result = await edit(ctx, "f.txt", ("b", "c"))
    assert target.read_bytes() == b"a\nc"
    assert result.output.endswith("2 + │ c\n    \\ No newline at end of file")
    target = put(tmp_path, "g.txt", "x\n\ty")
    await edit(ctx, "g.txt", ("x\n    y", "x\n    z"))
    assert target.read_bytes() == b"x\n\tz"


async def test_byte_order_mark_kept(ctx: ToolContext, tmp_path: Path) -> None:
    target = put(tmp_path, "b.txt", "\ufefffirst\nsecond\n")
    result = await edit(ctx, "b.txt", ("first\nsecond\n", "1st\nsecond\n"))
    assert result.status == "ok"
    assert target.read_bytes() == "\ufeff1st\nsecond\n".encode()


async def test_unicode(ctx: ToolContext, tmp_path: Path) -> None:
    content = "naïve = 'café ☕'\nπ = 3.14  # 円周率\n\t名前 = '🐍'\n"
    target = put(tmp_path, "u.py", content)
    result = await edit(
        ctx,
        "u.py",
        ("café ☕", "thé 🍵"),
        ("π = 3.14  # 円周率\n    名前 = '🐍'", "π = 3\n    名前 = 'ü'"),
    )
    assert result.status == "ok", result.output
    assert target.read_text() == "naïve = 'thé 🍵'\nπ = 3\n\t名前 = 'ü'\n"
    assert " · 1 matched ignoring whitespace" in result.output


async def test_mode_and_symlink_kept(ctx: ToolContext, tmp_path: Path) -> None:
    real = put(tmp_path, "real.sh", "echo hi\n")
    real.chmod(0o750)
    (tmp_path / "link.sh").symlink_to("real.sh")
    await edit(ctx, "link.sh", ("hi", "ho"))
    assert real.read_text() == "echo ho\n"
    assert (tmp_path / "link.sh").is_symlink()
    assert real.stat().st_mode & 0o777 == 0o750
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


async def test_a_50_mb_file(ctx: ToolContext, tmp_path: Path) -> None:
    line = "\tvalue = compute(index, 'some padding to make the line long enough')  # n\n"
    count = 50_000_000 // len(line) + 1
    middle = count // 2
    content = line * middle + "\tTARGET = 1\n" + line * (count - middle)
    target = put(tmp_path, "big.py", content)
    assert target.stat().st_size > 50_000_000
    loop = asyncio.get_running_loop()
    ticks = 0

    async def tick() -> None:  # the event loop keeps running while the tool works
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = loop.create_task(tick())
    result = await edit(ctx, "big.py", ("    TARGET = 1\n", "    TARGET = 2\n"))
    ticker.cancel()
    assert result.status == "ok", result.output[:300]
    assert result.output.split("\n")[0] == (
        f"edited big.py: 1 edit applied, +1 -1 lines, first changed line {middle + 1} · 1 matched "
        "ignoring whitespace"
    )
    assert target.stat().st_size == len(content)
    with target.open("rb") as f:
        f.seek(len(line) * middle)
        assert f.read(13) == b"\tTARGET = 2\n\t"
    assert ticks >= 3  # (its speed is bench/bench_edit.py's to measure)


# --- properties ------------------------------------------------------------------------------

WORDS = st.sampled_from(["x", "y = 1", "call()", "if a:", "}", "return b", "ä", "# note", ""])


def nested(rows: list[tuple[int, str]], start: int = 0) -> list[tuple[int, str]]:
    """Levels as code has them: one deeper at most from a line to the next."""
    out: list[tuple[int, str]] = []
    level = start
    for wanted, text in rows:
        level = min(wanted, level + 1) if text else level
        out.append((level, text))
    return out


@st.composite
def indented_file(draw: st.DrawFn) -> tuple[list[tuple[int, str]], str]:
    """Lines as (level, text), and the file's unit."""
    rows = draw(st.lists(st.tuples(st.integers(0, 3), WORDS), min_size=2, max_size=25))
    unit = draw(st.sampled_from(["\t", "    ", "  "]))
    return nested(rows), unit


def render(lines: list[tuple[int, str]], unit: str, trailing: list[str] | None = None) -> str:
    out = []
    for k, (level, text) in enumerate(lines):
        line = unit * level + text if text else ""
        out.append(line + (trailing[k] if trailing else ""))
    return "".join(line + "\n" for line in out)


def run_sync(ctx: ToolContext, path: str, pairs: list[tuple[str, str]]) -> ToolResult:
    args = EditFileArgs(path=path, edits=[{"old": o, "new": n} for o, n in pairs])
    return asyncio.run(EditFileTool().run(args, ctx))


def result_of(ctx: ToolContext, content: str, pairs: list[tuple[str, str]]) -> tuple[str, str]:
    target = ctx.cwd / "f.txt"
    target.write_text(content)
    result = run_sync(ctx, "f.txt", pairs)
    return target.read_text(), result.output


PROPERTY = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


BLOCK_WORDS = st.sampled_from(["alpha()", "beta = 2", "if gamma:", "δ()", "{", "# block"])
LEVEL = st.integers(0, 3)


@PROPERTY
@given(
    before=st.lists(st.tuples(LEVEL, WORDS), max_size=8),
    block=st.lists(st.tuples(LEVEL, BLOCK_WORDS | st.just("")), min_size=2, max_size=6),
    after=st.lists(st.tuples(LEVEL, WORDS), max_size=8),
    new=st.lists(st.tuples(st.integers(0, 2), BLOCK_WORDS), max_size=4),
    unit=st.sampled_from(["\t", "    ", "  "]),
    model_unit=st.sampled_from(["\t", "    ", "  ", "   "]),
    base_shift=st.integers(-1, 1),
    noise=st.lists(st.sampled_from(["", " ", "\t", "  "]), min_size=6, max_size=6),
)
def test_indent_perturbation_lands_where_the_exact_edit_lands(
    tmp_path: Path, before, block, after, new, unit, model_unit, base_shift, noise
) -> None:
    """The model retypes a block (and its replacement) in its own unit and base indent, with
    stray trailing whitespace: the file ends up as if it had copied the block exactly."""
    block[0] = (block[0][0], block[0][1] or "alpha()")  # the snippet starts and ends with text
    block[-1] = (block[-1][0], block[-1][1] or "δ()")
    head = [(0, "start:"), (1, "first")]  # the file shows its unit
    lines = nested(head + before + block + after)
    first = len(head) + len(before)
    block = lines[first : first + len(block)]
    base = min(level for level, text in block if text)
    assume(base + base_shift >= 0)
    new_block = [(base + level, text) for level, text in nested(new)]
    content = render(lines, unit)
    exact_old, exact_new = render(block, unit), render(new_block, unit)

    def retyped(rows: list[tuple[int, str]], trailing: list[str] | None = None) -> str:
        return render([(level + base_shift, text) for level, text in rows], model_unit, trailing)

    loose_old, loose_new = retyped(block, noise[: len(block)]), retyped(new_block)
    assume(content.count(loose_old.strip()) == 0)  # the edges pass must not catch it
    ctx = ToolContext(cwd=tmp_path, settings=Settings())
    want, _ = result_of(ctx, content, [(exact_old, exact_new)])
    got, output = result_of(ctx, content, [(loose_old, loose_new)])
    assert got == want, output


@PROPERTY
@given(
    data=indented_file(),
    span=st.tuples(st.integers(0, 30), st.integers(0, 30)),
    pad=st.tuples(st.sampled_from(["", "\n", " ", "\t", "  \n"]), st.sampled_from(["", "\n", " "])),
    new=st.text(alphabet="ab \n\t", min_size=1, max_size=8),
    carry=st.booleans(),
)
def test_edges_perturbation_lands_where_the_exact_edit_lands(
    tmp_path: Path, data, span, pad, new, carry
) -> None:
    """The model wraps a unique snippet in whitespace (and its `new` too, or not): the file
    ends up as if it had sent the snippet alone."""
    lines, unit = data
    content = render(lines, unit)
    lo, length = span
    snippet = content[lo : lo + length].strip(" \t\r\n")
    assume(snippet and content.count(snippet) == 1)
    lead, trail = pad
    loose_old = lead + snippet + trail
    assume(loose_old != snippet and content.count(loose_old) == 0)
    new = new.strip(" \t\n")  # no padding of its own, to tell apart from the model's
    assume(new)  # an empty new deletes whole lines in a loose match (a table test above)
    start = content.index(snippet)
    file_indent = content[content.rfind("\n", 0, start) + 1 : start]
    indent = lead.rsplit("\n", 1)[-1]
    at_line_start = indent and not file_indent.strip(" \t")
    # there the model's indent says how new's other lines are indented: they are re-indented
    assume(not at_line_start or file_indent == indent or "\n" not in new)
    ctx = ToolContext(cwd=tmp_path, settings=Settings())
    want, _ = result_of(ctx, content, [(snippet, new)])
    got, output = result_of(ctx, content, [(loose_old, lead + new + trail if carry else new)])
    assert got == want, output


@PROPERTY
@given(
    content=st.text(alphabet="ab\n\t é", max_size=60),
    edits=st.lists(
        st.tuples(st.text(alphabet="ab\n\t é", max_size=6), st.text(alphabet="xy\n", max_size=4)),
        min_size=1,
        max_size=4,
    ),
    crlf=st.booleans(),
)
def test_a_refused_edit_never_changes_a_byte(tmp_path: Path, content, edits, crlf) -> None:
    crlf = crlf and "\n" in content
    data = (content.replace("\n", "\r\n") if crlf else content).encode()
    target = tmp_path / "f.txt"
    target.write_bytes(data)
    os.utime(target, (1_000_000, 1_000_000))
    ctx = ToolContext(cwd=tmp_path, settings=Settings())
    result = run_sync(ctx, "f.txt", edits)
    if result.status == "error" or "unchanged" in result.output:
        assert target.read_bytes() == data
        assert target.stat().st_mtime == 1_000_000
    else:
        assert result.output.startswith(f"edited f.txt: {len(edits)} edit")
        written = target.read_bytes()
        assert not crlf or written.count(b"\n") == written.count(b"\r\n")
