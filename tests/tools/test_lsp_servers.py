"""The lsp tool against real language servers: pylsp and basedpyright for Python, clangd for C,
on the small projects of tests/lsp_fixtures copied to a temporary folder.

The projects that only read share one server per language for the whole module (starting them
is most of the cost); the tests that write (rename, edits on disk) or kill a server get their
own. Under `make test` a server that is not installed fails its tests (see support.py).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from lsp_fixtures.support import Project, copy_project, make_project, require, server_path

from mm_tui.config import Settings
from mm_tui.tools.lsp import LspArgs, LspTool
from mm_tui.tools.lsp.asking import SETTLE_GRACE
from mm_tui.tools.registry import ToolRegistry

pytestmark = pytest.mark.asyncio(loop_scope="module")

PYTHON = ["pylsp", "pyright"]
# clangd answers across files from its index, whose threads run at idle priority
# (support/load.py): its cases run with the busy loops of a loaded run stopped.
ALL = ["pylsp", "pyright", pytest.param("clangd", marks=pytest.mark.idle_priority)]

Shared = Callable[[str], Awaitable[Project]]


@pytest.fixture(scope="module", autouse=True)
def _server_path() -> Iterator[None]:
    """The servers are found on the PATH the tests set up (.venv/bin first), for this module."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", server_path())
        yield


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Shared]:
    """One project and server per language server, started on first use, for read-only tests."""
    projects: dict[str, Project] = {}

    async def get(name: str) -> Project:
        if name not in projects:
            projects[name] = make_project(name, tmp_path_factory.mktemp(f"shared-{name}"))
        return projects[name]

    yield get
    await asyncio.gather(*(p.aclose() for p in projects.values()))


@pytest_asyncio.fixture(loop_scope="module")
async def fresh(tmp_path: Path) -> AsyncIterator[Callable[..., Project]]:
    """A project of its own, for a test that writes to it or kills its server."""
    made: list[Project] = []

    def make(name: str, **options) -> Project:
        project = make_project(name, tmp_path / name, **options)
        made.append(project)
        return project

    yield make
    await asyncio.gather(*(p.aclose() for p in made))


# --- definition ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PYTHON)
async def test_definition_python(shared: Shared, name: str) -> None:
    project = await shared(name)
    assert await project.ok(action="definition", path="main.py", symbol="make_person") == (
        "greeter.py:15:5  def make_person(name: str) -> Person:"
    )
    # a receiver prefix and stray punctuation are dropped
    assert await project.ok(action="definition", path="main.py", symbol="`alice.greet`,") == (
        "greeter.py:10:9  def greet(self, greeting: str) -> str:"
    )


@pytest.mark.idle_priority  # clangd's index: its threads run at idle priority
async def test_definition_clangd(shared: Shared) -> None:
    project = await shared("clangd")
    # the first occurrence of greet is in `#include "greet.h"`: a string, tried after the code
    assert await project.ok(action="definition", path="main.c", symbol="greet") == (
        "greet.c:4:5  int greet(const struct person *p) {"
    )
    assert await project.ok(action="definition", path="main.c", symbol="person", line=5) == (
        "greet.h:4:8  struct person {"
    )


@pytest.mark.idle_priority  # clangd's index: its threads run at idle priority
async def test_definition_outside_the_project_is_absolute(shared: Shared) -> None:
    project = await shared("clangd")
    output = await project.ok(action="definition", path="greet.c", symbol="printf")
    path = output.split(":")[0]
    assert os.path.isabs(path) and path.endswith(".h"), output
    assert "printf" in output


# --- references ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PYTHON)
async def test_references_python(shared: Shared, name: str) -> None:
    project = await shared(name)
    assert await project.ok(action="references", path="greeter.py", symbol="Person") == (
        "5 reference(s):\n"
        "greeter.py:4:7  class Person:\n"
        "greeter.py:15:31  def make_person(name: str) -> Person:\n"
        "greeter.py:17:12  return Person(name)\n"
        "main.py:1:21  from greeter import Person, make_person\n"
        'main.py:8:11  bob = Person("bob")'
    )


@pytest.mark.idle_priority  # clangd's index: its threads run at idle priority
async def test_references_clangd(shared: Shared) -> None:
    project = await shared("clangd")
    assert await project.ok(action="references", path="greet.h", symbol="greet") == (
        "4 reference(s):\n"
        "greet.c:4:5  int greet(const struct person *p) {\n"
        "greet.h:10:5  int greet(const struct person *p);\n"
        "main.c:7:5  greet(&alice);\n"
        "main.c:8:12  return greet(&bob);"
    )


@pytest.mark.parametrize("name", ALL)
async def test_references_as_the_first_call_of_a_server(fresh, name: str) -> None:
    """A server answers from what it has read so far: the first question, asked as soon as it
    started, waits for it to have read the project (clangd's index, pyright's file list)."""
    project: Project = fresh(name)
    if name == "clangd":
        output = await project.ok(action="references", path="greet.h", symbol="greet")
        assert output.startswith("4 reference(s):\ngreet.c:4:5")
    else:
        output = await project.ok(action="references", path="greeter.py", symbol="make_person")
        assert output == (
            "3 reference(s):\n"
            "greeter.py:15:5  def make_person(name: str) -> Person:\n"
            "main.py:1:29  from greeter import Person, make_person\n"
            'main.py:6:13  alice = make_person("alice")'
        )


# --- hover ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "path", "symbol", "expected"),
    [
        ("pylsp", "main.py", "make_person", ["make_person(name: str) -> Person", "A new Person"]),
        ("pyright", "main.py", "make_person", ["(function) def make_person(name: str) -> Person"]),
        (
            "clangd",
            "main.c",
            "greet",
            ["### function `greet`", "int greet(const struct person *p)"],
        ),
    ],
)
async def test_hover(
    shared: Shared, name: str, path: str, symbol: str, expected: list[str]
) -> None:
    project = await shared(name)
    output = await project.ok(action="hover", path=path, symbol=symbol)
    for part in expected:
        assert part in output
    assert output.startswith(("```", "###"))  # Markdown, as the server sent it


# --- symbols -------------------------------------------------------------------------------------

SYMBOLS = {
    # pylsp answers a flat SymbolInformation list, nested here
    "pylsp": (
        "greeter.py",
        "class Person  line 4\n"
        "  method __init__  line 7\n"
        "    field name  line 8\n"
        "  method greet  line 10\n"
        "function make_person  line 15",
    ),
    # pyright answers DocumentSymbol trees
    "pyright": (
        "greeter.py",
        "class Person  line 4\n"
        "  method __init__  line 7\n"
        "    variable name  line 7\n"
        "  variable name  line 8\n"
        "  method greet  line 10\n"
        "    variable greeting  line 10\n"
        "function make_person  line 15\n"
        "  variable name  line 15",
    ),
    "clangd": (
        "greet.h",
        "class person  [struct]  line 4\n"
        "  field name  [const char *]  line 5\n"
        "  field age  [int]  line 6\n"
        "function greet  [int (const struct person *)]  line 10",
    ),
}


@pytest.mark.parametrize("name", ALL)
async def test_symbols(shared: Shared, name: str) -> None:
    project = await shared(name)
    path, expected = SYMBOLS[name]
    assert await project.ok(action="symbols", path=path) == expected


# --- diagnostics ---------------------------------------------------------------------------------


@pytest.mark.idle_priority  # clangd's index: its threads run at idle priority
async def test_diagnostics_clangd_published(shared: Shared) -> None:
    project = await shared("clangd")
    expected = "error broken.c:6:18 Use of undeclared identifier 'missing' [clang]"
    assert await project.ok(action="diagnostics", path="broken.c") == (
        f"1 diagnostic(s) in broken.c:\n{expected}"
    )
    # unchanged since the server last spoke: its last publication, said so
    assert await project.ok(action="diagnostics", path="broken.c") == (
        f"1 diagnostic(s) in broken.c (as last published):\n{expected}"
    )
    # a file written on disk afterwards (as edit_file does) is seen at once
    fixed = project.root / "broken.c"
    fixed.write_text(fixed.read_text().replace("missing", "1"))
    assert await project.ok(action="diagnostics", path="broken.c") == (
        "no diagnostics: broken.c is clean"
    )
    assert await project.ok(action="diagnostics", path="broken.c") == (
        "no diagnostics: broken.c is clean (as last published)"
    )
    fixed.write_text(fixed.read_text().replace("return twice(1);", "return twice(1)"))
    output = await project.ok(action="diagnostics", path="broken.c")
    assert output.startswith(
        "1 diagnostic(s) in broken.c:\nerror broken.c:7:1 Expected ';' after return statement"
    )


async def test_diagnostics_pyright_pulled(shared: Shared) -> None:
    project = await shared("pyright")
    output = await project.ok(action="diagnostics", path="broken.py")
    assert re.match(r"\d+ diagnostic\(s\) in broken.py:\n", output), output
    assert 'error broken.py:6:7 "undefined_name" is not defined [basedpyright]' in output
    assert "error broken.py:5:21 Argument of type" in output
    assert await project.ok(action="diagnostics", path="wide.py") == (
        "no diagnostics: wide.py is clean"
    )
    client = project.client
    assert any(r["method"] == "textDocument/diagnostic" for r in client.registrations.values())


async def test_diagnostics_pylsp_without_linters_is_not_clean(shared: Shared) -> None:
    """pylsp without pyflakes & co publishes an empty list for any file, even a broken one."""
    project = await shared("pylsp")
    output = await project.ok(action="diagnostics", path="broken.py")
    assert output == (
        "no diagnostics from pylsp for broken.py: it has no linter installed (pyflakes, "
        "pycodestyle, …; python-lsp-server[all] brings them), so its empty list does not mean "
        "the file is clean"
    )
    assert "is clean" not in output.split(":")[0]


# --- rename --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PYTHON)
async def test_rename_python(fresh, name: str) -> None:
    """pylsp sends one edit replacing each whole file, pyright one per occurrence: the count is
    of the places changed either way."""
    project: Project = fresh(name)
    result = await project.call(
        action="rename", path="greeter.py", symbol="make_person", new_name="new_person"
    )
    assert result.status == "ok", result.output
    assert result.output == (
        "renamed to new_person: 3 edit(s) in 2 file(s)\ngreeter.py: 1 edit(s)\nmain.py: 2 edit(s)"
    )
    assert "def new_person(name: str) -> Person:" in (project.root / "greeter.py").read_text()
    main = (project.root / "main.py").read_text()
    assert 'alice = new_person("alice")' in main
    assert "# make_person builds a Person" in main  # comments are the server's business
    assert "+def new_person(name: str) -> Person:" in (result.diff or "")
    # the server was told: it answers about the new names
    assert await project.ok(action="references", path="main.py", symbol="new_person") == (
        "3 reference(s):\n"
        "greeter.py:15:5  def new_person(name: str) -> Person:\n"
        "main.py:1:29  from greeter import Person, new_person\n"
        'main.py:6:13  alice = new_person("alice")'
    )


@pytest.mark.idle_priority  # clangd's index: its threads run at idle priority
async def test_rename_clangd_across_files(fresh) -> None:
    project: Project = fresh("clangd")
    output = await project.ok(action="rename", path="main.c", symbol="greet", new_name="welcome")
    assert output == (
        "renamed to welcome: 4 edit(s) in 3 file(s)\n"
        "greet.c: 1 edit(s)\ngreet.h: 1 edit(s)\nmain.c: 2 edit(s)"
    )
    assert "int welcome(const struct person *p);" in (project.root / "greet.h").read_text()
    assert '#include "greet.h"' in (project.root / "main.c").read_text()
    assert await project.ok(action="definition", path="main.c", symbol="welcome") == (
        "greet.c:4:5  int welcome(const struct person *p) {"
    )


async def test_rename_several_words_form(fresh) -> None:
    """`Greet 1 12 Hello`: a small model packing symbol, line, column and new name together."""
    project: Project = fresh("pyright")
    output = await project.ok(action="rename", path="greeter.py", symbol="make_person 15 5 build")
    assert output.startswith("renamed to build: 3 edit(s) in 2 file(s)")
    assert "def build(name: str)" in (project.root / "greeter.py").read_text()


@pytest.mark.idle_priority  # clangd's index: its threads run at idle priority
async def test_rename_permission_shows_the_diff_then_writes_it(fresh) -> None:
    project: Project = fresh("clangd")
    tool = project.tool
    args = LspArgs(action="rename", path="main.c", symbol="alice", new_name="carol")
    assert tool.needs_permission(args) and tool.kind_for(args) == "edit"
    details = await tool.permission_details(args, project.ctx)
    assert details.startswith("--- a/main.c\n+++ b/main.c\n")
    assert '+    struct person carol = {"alice", 30};' in details
    assert "+    greet(&carol);" in details
    assert "alice" in (project.root / "main.c").read_text()  # nothing written yet
    result = await tool.run(args, project.ctx)
    assert result.output == "renamed to carol: 2 edit(s) in 1 file(s)\nmain.c: 2 edit(s)"
    assert result.diff == details
    assert "greet(&carol);" in (project.root / "main.c").read_text()


async def test_rename_needs_new_name(shared: Shared) -> None:
    project = await shared("pyright")
    result = await project.call(action="rename", path="greeter.py", symbol="Person")
    assert result.status == "error"
    assert result.output == (
        '[lsp: rename needs new_name — call lsp again with {"action": "rename", "path": '
        '"greeter.py", "symbol": "Person", "new_name": "<the new identifier>"}; do not use '
        "edit_file for a rename]"
    )


# --- positions and symbol resolution -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "path", "symbol", "hover"),
    [
        ("pylsp", "wide.py", "wörd_count", "int("),  # jedi shows the value's type, int
        ("pyright", "wide.py", "wörd_count", "(variable) wörd_count: Literal[3]"),
        ("clangd", "wide.c", "total", "### variable `total`"),
    ],
)
async def test_utf16_positions_both_ways(
    shared: Shared, name: str, path: str, symbol: str, hover: str
) -> None:
    """An emoji (two UTF-16 units) and accented letters before the symbol on its line."""
    project = await shared(name)
    text_line = (project.root / path).read_text().split("\n")[1]
    column = text_line.index(symbol, 10) + 1
    assert "👋" in text_line[: column - 1] and "é" in text_line[: column - 1]
    # in: the 1-based character column of the identifier's first letter lands on it (one unit
    # short, as a count in characters would be, is the character before it)
    output = await project.ok(action="hover", path=path, line=2, column=column)
    assert hover in output
    # out: the server's UTF-16 column comes back in characters
    references = await project.ok(action="references", path=path, symbol=symbol)
    assert f"{path}:2:{column}  {text_line.strip()}" in references.split("\n")


async def test_position_failures(shared: Shared) -> None:
    project = await shared("pyright")

    async def fails(**fields) -> str:
        result = await project.call(**fields)
        assert result.status == "error"
        return result.output

    assert await fails(action="hover", path="main.py", symbol="nowhere") == (
        '[lsp: "nowhere" not found in main.py]'
    )
    assert await fails(action="hover", path="main.py", symbol="Person", line=2) == (
        '[lsp: "Person" not found on line 2 of main.py]'
    )
    assert await fails(action="hover", path="main.py", line=40, column=1) == (
        "[lsp: line 40 is past the end of main.py (9 lines)]"
    )
    assert await fails(action="definition", path="wide.py", line=1, column=40) == (
        "[lsp: column 40 is past the end of line 1 (14 characters)]"
    )
    # the only occurrence on line 4 is in a comment: the server has nothing there
    assert await fails(action="definition", path="main.py", symbol="make_person", line=4) == (
        "[lsp: no definition found for the symbol at main.py:4:3]"
    )
    assert await fails(action="hover", path="main.py") == (
        "[lsp: hover needs a symbol (the identifier as written in the code), or a line and a "
        "column]"
    )


async def test_line_restricts_and_column_is_exact(shared: Shared) -> None:
    project = await shared("pylsp")
    # `greet` on line 9 is bob's call; with a column, that exact place
    output = await project.ok(action="definition", path="main.py", symbol="greet", line=9)
    assert output == "greeter.py:10:9  def greet(self, greeting: str) -> str:"
    output = await project.ok(action="definition", path="main.py", line=8, column=12)
    assert output == "greeter.py:4:7  class Person:"


# --- file sync -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
async def test_edits_on_disk_are_seen(fresh, name: str) -> None:
    """An edit made on disk between two calls (edit_file, the person's editor), in the file
    asked about or in another one the server had read, changes the next answer."""
    project: Project = fresh(name)
    if name == "clangd":
        call = {"action": "definition", "path": "main.c", "symbol": "greet"}
        target, before, after = project.root / "greet.c", "greet.c:4:5", "greet.c:6:5"
    else:
        call = {"action": "definition", "path": "main.py", "symbol": "make_person"}
        target, before, after = project.root / "greeter.py", "greeter.py:15:5", "greeter.py:17:5"
    assert (await project.ok(**call)).startswith(before)
    target.write_text("\n\n" + target.read_text())
    assert (await project.ok(**call)).startswith(after)
    # and the file asked about: two more lines above the call move it
    asked = project.root / call["path"]
    asked.write_text(asked.read_text().replace("\n\n", "\n\n\n\n", 1))
    uri = asked.resolve().as_uri()
    assert (await project.ok(**call)).startswith(after)
    server = project.tool.manager.running()[0]
    assert server.documents[uri].version == 2


# --- lifecycle -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["pylsp", pytest.param("clangd", marks=pytest.mark.idle_priority)])
async def test_a_killed_server_is_started_again(fresh, name: str) -> None:
    project: Project = fresh(name)
    call = (
        {"action": "hover", "path": "main.c", "symbol": "greet"}
        if name == "clangd"
        else {"action": "hover", "path": "main.py", "symbol": "make_person"}
    )
    first = await project.ok(**call)
    pid = project.client.pid
    os.kill(pid, signal.SIGKILL)
    second = await project.ok(**call)
    assert second == first
    assert project.client.pid != pid
    assert project.tool.manager.running()[0].starts == 2


@pytest.mark.idle_priority  # clangd's index: its threads run at idle priority
@pytest.mark.parametrize("name", ALL)
async def test_servers_start_on_first_use_and_stop_politely(fresh, name: str) -> None:
    project: Project = fresh(name)
    assert project.tool.manager.running() == []  # nothing started before a call
    await project.ok(action="symbols", path="main.c" if name == "clangd" else "main.py")
    client = project.client
    proc = client._proc
    assert proc is not None and proc.returncode is None
    # The server's start-up work done first (clangd indexing, slower still on a busy machine,
    # answers shutdown only when it is over; mm gives each step of the polite stop 2 s, then
    # kills, as a person quitting wants): a server at rest leaves politely.
    await client.settle(SETTLE_GRACE, 60)
    await project.tool.aclose()
    assert proc.returncode == 0  # it left on shutdown and exit, not killed
    assert project.tool.manager.running() == []


async def test_missing_server_warning_and_declaration(tmp_path: Path) -> None:
    """For real: one configured server is on the PATH, one is not."""
    pylsp = require("pylsp")
    settings = Settings.model_validate(
        {
            "lsp": {
                "servers": [
                    {"name": "gopls", "command": "mm-test-no-gopls", "extensions": [".go"]},
                    pylsp.model_dump(),
                ]
            }
        }
    )
    registry = ToolRegistry.from_settings(settings, tmp_path)
    assert registry.warnings == [
        "[warning: lsp server gopls (mm-test-no-gopls) not found on the PATH — skipped]"
    ]
    tool = registry.get("lsp")
    assert isinstance(tool, LspTool)
    assert "Servers available: pylsp (.py)." in tool.description()
    assert "gopls" not in tool.description()
    await registry.aclose()


# --- through the engine --------------------------------------------------------------------------


@pytest.mark.idle_priority  # clangd's index: its threads run at idle priority
async def test_through_the_engine_with_permissions(tmp_path: Path) -> None:
    """The engine reads the kind per call: navigation is `read` and runs, rename is `edit` and
    asks; refused, the model hears the text docs/tools.md quotes and nothing is written."""
    from support.engine import make_engine
    from support.scripted_model import ScriptedModel, calls, say

    from mm_tui.core.events import (
        Decision,
        PermissionRequested,
        ToolCallFinished,
        ToolCallStarted,
        TurnEnded,
    )

    clangd = require("clangd")
    root = copy_project("c", tmp_path / "project")
    settings = Settings(yolo=False, lsp={"servers": [clangd.model_dump()]})
    model = ScriptedModel(
        calls(
            ("lsp", {"action": "definition", "path": "main.c", "symbol": "greet"}, "c1"),
            (
                "lsp",
                {"action": "rename", "path": "main.c", "symbol": "greet", "new_name": "hi"},
                "c2",
            ),
        ),
        say("done"),
    )
    engine = make_engine(root, model, settings=settings, sessions=tmp_path / "sessions")
    events: list = []
    asked: list[PermissionRequested] = []

    def emit(event) -> None:
        events.append(event)
        if isinstance(event, PermissionRequested):
            asked.append(event)
            engine.answer(event.agent, event.call_id, Decision.REJECT)

    try:
        await engine.run_turn("where is greet? then rename it", emit)
    finally:
        await engine.aclose()
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(e.kind, e.display) for e in started] == [
        ("read", "🔎 lsp: definition main.c greet"),
        ("edit", "🔎 lsp: rename main.c greet → hi"),
    ]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished[0].output == "greet.c:4:5  int greet(const struct person *p) {"
    assert finished[1].status == "rejected"
    assert finished[1].output == "[rename rejected by the user]"
    assert len(asked) == 1 and "+int hi(const struct person *p);" in asked[0].details
    assert "int greet(" in (root / "greet.h").read_text()  # nothing written
    ended = [e for e in events if isinstance(e, TurnEnded)][0]
    assert ended.counters.lsp_calls == 2
