"""The lsp tool against the language servers that come from npm (tests/node_lsp, installed by
`make test` from its package-lock.json): typescript-language-server, which drives TypeScript's
tsserver for .ts and .js files, and bash-language-server.

The TypeScript server runs in the default sandbox, as mm runs it for a person: it watches the
process whose id `initialize` names and exits when it cannot signal it, which a confined server
never can (Landlock scopes signals); mm names none. Under `make test` a server that is not
installed fails its tests, unless npm itself is missing (see lsp_fixtures/support.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from lsp_fixtures.support import Project, make_project, server_path

from mm_tui.config import Settings
from mm_tui.core import sandbox

ABI, _WHY = sandbox.landlock_abi({})

# typescript-language-server checks the process `initialize` named every 3 seconds from then
# on (vscode-languageserver's watchdog), and exits at the first check that fails: calls made
# after this long run after such a check.
PAST_THE_PARENT_CHECK = 4.5

TS_SYMBOLS = (
    "class Person  line 3\n"
    "  constructor constructor  line 4\n"
    "  property name  line 4\n"
    "  method greet  line 6\n"
    "function makePerson  line 11"
)
SH_SYMBOLS = "variable GREETING  line 4\nfunction greet  line 6\nfunction farewell  line 10"


@pytest.fixture(autouse=True)
def _server_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """The servers are found on the PATH the tests set up (tests/node_lsp's .bin among it).

    Their temp folder is one of the test's own, as a person's /tmp holds no folder of mm's: the
    tests' state folder is under /tmp (pytest's), and the sandbox keeps a read-only folder by
    giving up the right to make entries in every folder above it, /tmp among them, where
    typescript-language-server makes its own (EACCES, once an earlier test made the folder)."""
    monkeypatch.setenv("PATH", server_path())
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    yield


async def test_typescript_in_the_default_sandbox_all_six_actions_one_server(
    tmp_path: Path,
) -> None:
    """Every action on a small TypeScript project (and a JavaScript file), under the sandbox
    a person gets by default, from one server that is never started again."""
    settings = Settings()
    project = make_project("tsserver", tmp_path / "ts", sandbox=settings.sandbox_config())
    try:
        assert await project.ok(action="symbols", path="greeter.ts") == TS_SYMBOLS
        server = project.tool.manager.running()[0]
        client = project.client
        pid = client.pid
        assert pid is not None
        if ABI >= 1:  # confined (without Landlock the default sandbox confines nothing)
            assert "NoNewPrivs:\t1" in Path(f"/proc/{pid}/status").read_text()

        async def same_server(**fields) -> str:
            output = await project.ok(**fields)
            assert (server.starts, project.client.pid) == (1, pid), output
            return output

        await asyncio.sleep(PAST_THE_PARENT_CHECK)
        assert await same_server(action="definition", path="main.ts", symbol="makePerson") == (
            "greeter.ts:11:17  export function makePerson(name: string): Person {"
        )
        assert await same_server(action="references", path="greeter.ts", symbol="Person") == (
            "5 reference(s):\n"
            "greeter.ts:3:14  export class Person {\n"
            "greeter.ts:11:43  export function makePerson(name: string): Person {\n"
            "greeter.ts:12:14  return new Person(name);\n"
            'main.ts:1:10  import { Person, makePerson } from "./greeter";\n'
            'main.ts:6:19  const bob = new Person("bob");'
        )
        hover = await same_server(action="hover", path="greeter.ts", symbol="makePerson")
        assert hover.startswith("```typescript\nfunction makePerson(name: string): Person"), hover
        assert await same_server(action="diagnostics", path="broken.ts") == (
            "1 diagnostic(s) in broken.ts:\n"
            "error broken.ts:5:37 Argument of type 'string' is not assignable to parameter of "
            "type 'number'. [typescript]"
        )
        assert await same_server(action="symbols", path="counter.js") == (
            "function makeCounter  line 3\n"
            "  variable count  line 4\n"
            "  function next  line 5\n"
            "constant <unknown>  line 11\n"  # `module.exports = {…}`, as tsserver names it
            "  property makeCounter  line 11"
        )
        assert await same_server(
            action="rename", path="greeter.ts", symbol="makePerson", new_name="newPerson"
        ) == (
            "renamed to newPerson: 3 edit(s) in 2 file(s)\ngreeter.ts: 1 edit(s)\nmain.ts: 2 edit(s)"
        )
        assert 'const alice = newPerson("alice");' in (project.root / "main.ts").read_text()
        assert await same_server(action="definition", path="main.ts", symbol="newPerson") == (
            "greeter.ts:11:17  export function newPerson(name: string): Person {"
        )
        assert client.alive
    finally:
        await project.aclose()


async def test_bash_first_symbols_after_the_start_lists_them(tmp_path: Path) -> None:
    """bash-language-server reads no file until its start-up is over (its configuration asked
    of mm and heard): a question asked first, right after the start, waits for it to have read
    the file. A race, so several fresh servers are each asked once."""
    for attempt in range(6):
        project: Project = make_project("bashls", tmp_path / f"sh{attempt}")
        try:
            assert await project.ok(action="symbols", path="greet.sh") == SH_SYMBOLS
        finally:
            await project.aclose()


async def test_bash_first_hover_after_the_start_finds_it(tmp_path: Path) -> None:
    """The same race for a question at a position."""
    for attempt in range(6):
        project: Project = make_project("bashls", tmp_path / f"sh{attempt}")
        try:
            assert await project.ok(action="hover", path="main.sh", symbol="farewell") == (
                "Function: **farewell** - *defined in greet.sh*"
            )
        finally:
            await project.aclose()
