"""Security faults, through the real `mm`, the window and the engine on the scripted server:

12. the api key, set in the environment and in the config file, printed by a tool: absent from
    every session file, log, line of output and screenshot; the config file is never rewritten;
13. read_skill and the session folder refuse path tricks: `../`, absolute paths, symbolic links
    out of their folder, link loops.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from support.engine import make_engine, of, turn
from support.fault_parts import next_prompt_works, session_loads
from support.program import mm
from support.scripted_server import Reply, ScriptedServer, call
from support.session_helpers import journal_files, sessions_of
from support.session_helpers import saved as saved_session
from support.window_helpers import all_text, make_app, screen_text, settle

from mm_tui.core.events import ToolCallFinished
from mm_tui.core.redact import MARK
from mm_tui.engine.journal import flush_all
from mm_tui.engine.provider import OpenAIProvider
from mm_tui.engine.session import Session

ENV_KEY = "sk-env-0123456789abcdef0123"
OPENAI_KEY = "sk-openai-fedcba9876543210"
CONFIG_KEY = "sk-config-5555aaaa7777bbbb"
KEYS = (ENV_KEY, OPENAI_KEY, CONFIG_KEY)
PRINT_KEYS = 'echo "env: $MM_API_KEY and $OPENAI_API_KEY"; cat .mm/config.yaml'


def files_holding(root: Path, secrets: tuple[str, ...], *, but: tuple[Path, ...] = ()) -> list:
    """Every file under `root` (session files, logs, temporary files...) that holds a secret."""
    found = []
    for path in root.rglob("*"):
        if path in but or not path.is_file() or path.is_symlink():
            continue
        data = path.read_bytes()
        found += [(path, s) for s in secrets if s.encode() in data]
    return found


pytestmark = pytest.mark.usefixtures("no_process_left")


# --- 12. the api key -----------------------------------------------------------------------------


def test_the_key_printed_by_a_tool_is_never_shown_or_written(tmp_path: Path) -> None:
    config = tmp_path / ".mm" / "config.yaml"
    config.parent.mkdir()
    config.write_text(f"apiKey: {CONFIG_KEY}\nmaxTurns: 10\n")
    before = (config.read_bytes(), config.stat().st_mtime_ns)
    script = [
        Reply(
            "Let me look at the key.",
            tool_calls=[
                call("bash", {"command": PRINT_KEYS}, id="c1"),
                call("read_file", {"path": ".mm/config.yaml"}, id="c2"),
            ],
        ),
        Reply("I will not repeat it."),
    ]
    # The server takes only the environment's key: proof that it is the one in use.
    with ScriptedServer(*script, api_key=ENV_KEY) as server:
        env = {"MM_API_KEY": ENV_KEY, "OPENAI_API_KEY": OPENAI_KEY}
        result = mm(
            "--base-url", server.base_url, "--model", "m", "-p", "show me", cwd=tmp_path, env=env
        )
        assert result.returncode == 0, result.stderr
        # The command's environment has no key variables (core/command_env.py); the key in the
        # config file reached the tools, and the model did not get it back.
        c1, c2 = (m["content"] for m in server.requests[1].messages if m["role"] == "tool")
        assert c1 == f"env:  and \napiKey: {MARK}\nmaxTurns: 10\n"
        assert f"apiKey: {MARK}" in c2
        for request in server.requests:
            body = request.raw.decode()
            assert not [k for k in KEYS if k in body]
            assert request.headers["authorization"] == f"Bearer {ENV_KEY}"
    # Not on the screen (line mode prints the same events as the window), not in any file.
    assert f"    apiKey: {MARK}" in result.stdout
    assert not [k for k in KEYS if k in result.stdout + result.stderr]
    assert files_holding(tmp_path, KEYS, but=(config,)) == []
    (path,) = journal_files(sessions_of(tmp_path))
    session_loads(path.parent, path.stem)
    # The config file was read and never rewritten.
    assert (config.read_bytes(), config.stat().st_mtime_ns) == before


def test_short_keys_are_left_alone(tmp_path: Path) -> None:
    """A placeholder key such as `ollama` is no secret: hiding it would garble every mention."""
    with ScriptedServer(
        Reply(tool_calls=[call("bash", {"command": "echo key=ollama"}, id="c1")]), "ok"
    ) as server:
        env = {"MM_API_KEY": "ollama"}
        result = mm(
            "--base-url", server.base_url, "--model", "m", "-p", "go", cwd=tmp_path, env=env
        )
        assert result.returncode == 0, result.stderr
        assert server.requests[1].messages[-1]["content"] == "key=ollama\n"
    assert "    key=ollama" in result.stdout


async def test_the_window_never_paints_the_key(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (folder / "notes.txt").write_text(f"the key is {CONFIG_KEY}\n")
    monkeypatch.setenv("MM_API_KEY", ENV_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    command = 'echo "$MM_API_KEY $OPENAI_API_KEY"; cat notes.txt'
    with ScriptedServer(
        Reply(tool_calls=[call("bash", {"command": command}, id="c1")]), "Done."
    ) as server:
        model = OpenAIProvider(server.base_url, "m", api_key=ENV_KEY, retries=0)
        app = make_app(model, folder, apiKey=CONFIG_KEY)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            await pilot.press(*"show the keys")
            await pilot.press("enter")
            await settle(pilot, app)
            await pilot.press("ctrl+o")  # open every tool output
            await settle(pilot, app)
            painted = screen_text(app)
            # the key variables are not in the command's environment: an empty line; the key in
            # the file reached the tool and is masked
            assert f"the key is {MARK}" in painted
            everything = all_text(app) + app.export_screenshot()
            assert not [k for k in KEYS if k in everything]
            session = app.engine.session
        await model.aclose()
    assert files_holding(folder, KEYS, but=(folder / "notes.txt",)) == []
    session_loads(session.folder, session.id)


# --- 13. path tricks: read_skill -----------------------------------------------------------------

DEPLOY = "# Deploy\n\nRun `make deploy`.\n"
SECRET_TEXT = "TOP SECRET: the launch codes\n"


def skills_with_tricks(root: Path) -> Path:
    """A skills folder with one real skill, a link to it inside the folder, and links that
    lead out of the folder or round in a loop."""
    outside = root / "outside"
    (outside / "stolen").mkdir(parents=True)
    (outside / "secret.md").write_text(SECRET_TEXT)
    (outside / "stolen" / "SKILL.md").write_text(SECRET_TEXT)
    skills = root / "project" / ".mm" / "skills"
    skills.mkdir(parents=True)
    (skills / "deploy.md").write_text(DEPLOY)
    (skills / "alias.md").symlink_to("deploy.md")  # inside the folder: fine
    (skills / "evil.md").symlink_to(outside / "secret.md")
    (skills / "relative.md").symlink_to("../../../outside/secret.md")
    (skills / "stolen").symlink_to(outside / "stolen")
    (skills / "inner").mkdir()
    (skills / "inner" / "SKILL.md").symlink_to(outside / "secret.md")
    (skills / "loop.md").symlink_to("loop.md")
    return root / "project"


OUT = "is a symbolic link that leads out of the skills folder"
TRICKS = {
    "../secret": 'No skill named "secret". Available skills: alias, deploy',
    "../../outside/secret.md": 'No skill named "secret.md". Available skills: alias, deploy',
    "/etc/passwd": 'No skill named "passwd". Available skills: alias, deploy',
    "evil": f'skill "evil" cannot be read: evil.md {OUT}',
    "relative": f'skill "relative" cannot be read: relative.md {OUT}',
    "stolen": f'skill "stolen" cannot be read: stolen {OUT}',
    "inner": f'skill "inner" cannot be read: inner/SKILL.md {OUT}',
    "loop": 'skill "loop" cannot be read: loop.md is a symbolic link loop',
    "../../deploy": DEPLOY,
    "alias": DEPLOY,
}


async def test_read_skill_refuses_path_tricks(tmp_path: Path) -> None:
    project = skills_with_tricks(tmp_path)
    calls = [call("read_skill", {"name": n}, id=f"c{i}") for i, n in enumerate(TRICKS)]
    with ScriptedServer(Reply(tool_calls=calls), "done") as server:
        engine = make_engine(project, server)
        assert sorted(engine.registry.warnings) == sorted(
            f'skill "{name}" is not offered: {why.split("cannot be read: ")[1]}'
            for name, why in TRICKS.items()
            if "cannot be read" in why
        )
        # Swapped for a link after start-up: refused all the same.
        events = await asyncio.wait_for(turn(engine, "read them"), 20)
        assert events[-1].stop_reason == "end_turn"
        outputs = [e.output for e in of(events, ToolCallFinished)]
        assert dict(zip(TRICKS, outputs, strict=True)) == TRICKS
        description = server.requests[0].tools[server.requests[0].tool_names.index("read_skill")]
        catalogue = description["function"]["description"]
        assert "  alias — Deploy" in catalogue and "  deploy — Deploy" in catalogue
        assert not [
            n for n in ("evil", "relative", "stolen", "inner", "loop") if f"  {n} —" in catalogue
        ]
        skills = project / ".mm" / "skills"
        (skills / "deploy.md").unlink()
        (skills / "deploy.md").symlink_to(tmp_path / "outside" / "secret.md")
        server.script(Reply(tool_calls=[call("read_skill", {"name": "deploy"}, id="d")]), "ok")
        events = await asyncio.wait_for(turn(engine, "again"), 20)
        (finished,) = of(events, ToolCallFinished)
        assert finished.output == f'skill "deploy" cannot be read: deploy.md {OUT}'
        for request in server.requests:
            assert SECRET_TEXT.strip() not in request.raw.decode()
        session_loads(engine)
        await next_prompt_works(engine, server)
        await engine.aclose()
    assert files_holding(project, ("TOP SECRET",)) == []


def test_mm_says_which_skills_it_refused(tmp_path: Path) -> None:
    project = skills_with_tricks(tmp_path)
    with ScriptedServer("hello") as server:
        result = mm("--base-url", server.base_url, "--model", "m", "-p", "hi", cwd=project)
    assert result.returncode == 0, result.stderr
    assert f'mm: skill "evil" is not offered: evil.md {OUT}' in result.stderr.splitlines()
    assert 'mm: skill "loop" is not offered: loop.md is a symbolic link loop' in result.stderr


# --- 13. path tricks: the session folder ---------------------------------------------------------


def a_session_outside(root: Path) -> Session:
    session = Session.new(root / "elsewhere", cwd=str(root), model="m", provider="p", base_url="u")
    session.set_messages([{"role": "system", "content": "s"}, {"role": "user", "content": "x"}])
    flush_all()
    return session


@pytest.mark.parametrize(
    ("trick", "refusal"),
    [
        ("../elsewhere/ID", "is not a session id"),
        ("ABSOLUTE", "is not a session id"),
        ("/etc/passwd", "is not a session id"),
        ("LINK OUT", "refused: a symbolic link out of the session folder (to "),
        ("LINK LOOP", "refused: a symbolic link loop"),
    ],
)
def test_resume_refuses_path_tricks(tmp_path: Path, trick: str, refusal: str) -> None:
    outside = a_session_outside(tmp_path)
    folder = tmp_path / ".mm" / "sessions"
    folder.mkdir(parents=True)
    session_id = trick.replace("ID", outside.id)
    if trick == "ABSOLUTE":
        session_id = str(outside.path)
    elif trick == "LINK OUT":
        session_id = "20260101-000000-aaaaaa"
        (folder / f"{session_id}.jsonl").symlink_to(outside.path)
    elif trick == "LINK LOOP":
        session_id = "20260101-000000-bbbbbb"
        (folder / f"{session_id}.jsonl").symlink_to(f"{session_id}.jsonl")
    raw = outside.path.read_bytes()
    with ScriptedServer("should not be asked") as server:
        result = mm(
            "--base-url", server.base_url, "--model", "m", "--resume", session_id, "-p", "go",
            cwd=tmp_path,
        )  # fmt: skip
        assert server.requests == []
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("mm: ") and refusal in line
    assert outside.path.read_bytes() == raw


async def test_saving_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    folder = tmp_path / ".mm" / "sessions"
    folder.mkdir(parents=True)
    with ScriptedServer(Reply(tool_calls=[call("bash", {"command": "echo hi"})]), "done") as server:
        engine = make_engine(tmp_path, server)
        # Where this process writes its next session file before renaming it.
        temp = folder / f".{engine.session.id}.jsonl.{os.getpid()}.tmp"
        temp.symlink_to(victim)
        events = await asyncio.wait_for(turn(engine, "go"), 20)
        assert events[-1].stop_reason == "end_turn"
        assert victim.read_text() == "precious\n"
        assert not engine.session.path.is_symlink()
        assert not temp.exists() and not temp.is_symlink()
        saved = session_loads(engine)
        assert saved_session(engine.session)["messages"] == saved.messages
        await next_prompt_works(engine, server)
        await engine.aclose()
