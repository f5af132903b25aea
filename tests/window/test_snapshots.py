"""Pictures of window mode (pytest-textual-snapshot). Deterministic: clocks frozen (spinners and
elapsed times), no blinking cursor, a fixed size and folder, scripted models with fixed output.
An SVG changes only on purpose: look at the new picture before accepting it
(`pytest tests/window/test_snapshots.py --snapshot-update`).

The folder is the one fixed path /tmp/mm-test-playground, not a per-test folder: the header
shows the working folder, so any other path would change every picture. The `fixed_folder`
fixture holds a lock on it (support/folders.py) for the whole test, so runs side by side take
turns instead of emptying each other's folder."""

from __future__ import annotations

from pathlib import Path

from support.events import text_delta, tool_started
from support.scripted_model import ScriptedModel, call, calls, say
from support.waiting import until
from support.window_helpers import make_app, settle, started_app

from mm_tui.core.events import (
    AgentFinished,
    AgentStarted,
    Counters,
    PermissionRequested,
    ThoughtDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
    Usage,
)
from mm_tui.engine.demo import DemoModel
from mm_tui.startup import DEMO_NOTE
from mm_tui.window.transcript.store import ToolItem

SIZE = (100, 30)

EDIT_DIFF = "\n".join(
    [
        "--- a/greet.py",
        "+++ b/greet.py",
        "@@ -3,4 +3,4 @@",
        " ",
        " def greet(name: str) -> str:",
        '-    return f"Helo, {name}!"',
        '+    return f"Hello, {name}!"',
        " ",
        "",
    ]
)


async def ready(pilot) -> None:
    app = pilot.app
    await settle(pilot, app)
    app.main.prompt.cursor_blink = False


async def send(pilot, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")
    await settle(pilot, pilot.app)


def tool_turn_model() -> ScriptedModel:
    return ScriptedModel(
        calls(
            ("bash", {"command": "echo hello; echo world"}, "c1"),
            ("bash", {"command": "echo oops >&2; exit 3"}, "c2"),
            ("write_file", {"path": "notes.md", "content": "# Notes\n\n- one\n- two\n"}, "c3"),
        ),
        say("Ran two commands and wrote **notes.md**."),
    )


def test_welcome_on_the_demo_model(snap_compare, fixed_folder: Path) -> None:
    app = make_app(DemoModel(delay=0), fixed_folder, notes=(DEMO_NOTE,))
    assert snap_compare(app, terminal_size=SIZE, run_before=ready)


def test_dead_server_at_start_up(snap_compare, fixed_folder: Path) -> None:
    """A configured server that does not answer (nothing listens on the discard port): the
    header says `no answer` and the start-up warning says how to fix it."""
    app = started_app("http://127.0.0.1:9/v1", fixed_folder)

    async def run_before(pilot) -> None:
        await ready(pilot)  # the real start-up, in the boot worker

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_answer_half_streamed(snap_compare, fixed_folder: Path) -> None:
    app = make_app(ScriptedModel(), fixed_folder)

    async def run_before(pilot) -> None:
        await ready(pilot)
        app.main.emit(TurnStarted(turn=1, text="explain the project"))
        app.main.emit(ThoughtDelta(text="The README and greet.py say it all."))
        for piece in [
            "## greeter\n\nA tiny project with ",
            "two files:\n\n- `greet.py` says hello\n- `test_greet.py` ",
            "checks it\n\n```python\ndef greet(name: str) -> str:\n",
            '    return f"Helo, {name}!"\n',
        ]:
            app.main.emit(text_delta(piece))
        await settle(pilot, app, idle=False)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_tool_lines_folded(snap_compare, fixed_folder: Path) -> None:
    app = make_app(tool_turn_model(), fixed_folder)

    async def run_before(pilot) -> None:
        await ready(pilot)
        await send(pilot, "do three things")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_tool_lines_unfolded(snap_compare, fixed_folder: Path) -> None:
    app = make_app(tool_turn_model(), fixed_folder)

    async def run_before(pilot) -> None:
        await ready(pilot)
        await send(pilot, "do three things")
        await pilot.press("ctrl+o")
        await settle(pilot, app)
        await pilot.press("tab", "home")
        await settle(pilot, app)

    assert snap_compare(app, terminal_size=(100, 40), run_before=run_before)


def test_light_theme(snap_compare, fixed_folder: Path) -> None:
    app = make_app(tool_turn_model(), fixed_folder, app_theme="mm-light", theme="mm-light")

    async def run_before(pilot) -> None:
        await ready(pilot)
        await send(pilot, "do three things")
        await pilot.press("ctrl+o")
        await settle(pilot, app)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_light_theme_rule_and_code_block(snap_compare, fixed_folder: Path) -> None:
    """mm-light's recap rule (visible on the light background) and a code block in a light
    style (not Monokai's dark panel)."""
    answer = (
        "The fix:\n\n```python\ndef greet(name: str) -> str:\n"
        '    return f"Hello, {name}!"  # was Helo\n```\n\n1. edit greet.py\n2. run the tests\n'
    )
    app = make_app(ScriptedModel(say(answer)), fixed_folder, app_theme="mm-light", theme="mm-light")

    async def run_before(pilot) -> None:
        await ready(pilot)
        await send(pilot, "fix the typo")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_permission_box_for_bash(snap_compare, fixed_folder: Path) -> None:
    app = make_app(
        ScriptedModel(call("bash", {"command": "rm -rf build && make"})), fixed_folder, yolo=False
    )

    async def run_before(pilot) -> None:
        await ready(pilot)
        await pilot.press(*"rebuild")
        await pilot.press("enter")
        await until(lambda: app.main.box.request is not None, "the question", pilot=pilot)
        await settle(pilot, app, idle=False)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_permission_box_offering_a_rule(snap_compare, fixed_folder: Path) -> None:
    """`p` opens the line of the rule offered, to edit; Tab has switched where it is kept."""
    app = make_app(
        ScriptedModel(call("bash", {"command": "git log --oneline -5"})), fixed_folder, yolo=False
    )

    async def run_before(pilot) -> None:
        await ready(pilot)
        await pilot.press(*"what changed", "enter")
        await until(lambda: app.main.box.request is not None, "the question", pilot=pilot)
        await settle(pilot, app, idle=False)
        await pilot.press("p")
        await until(lambda: app.main.box.query("#entry"), "the rule's line", pilot=pilot)
        await pilot.press("tab")
        await settle(pilot, app, idle=False)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_permission_box_for_a_spoofed_command(snap_compare, fixed_folder: Path) -> None:
    """A command that erases its own line and writes `ls -la` over it shows whole, every escape
    as `\\x1b`, in the box and in the tool line above it."""
    command = "rm -f important.txt; echo gone #\x1b[2K\x1b[1G\x1b[1A\x1b[2Kls -la"
    app = make_app(ScriptedModel(call("bash", {"command": command})), fixed_folder, yolo=False)

    async def run_before(pilot) -> None:
        await ready(pilot)
        await pilot.press(*"tidy up")
        await pilot.press("enter")
        await until(lambda: app.main.box.request is not None, "the question", pilot=pilot)
        await settle(pilot, app, idle=False)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_permission_box_for_edit_file(snap_compare, fixed_folder: Path) -> None:
    app = make_app(ScriptedModel(), fixed_folder, yolo=False)

    async def run_before(pilot) -> None:
        await ready(pilot)
        app.main.emit(TurnStarted(turn=1, text="fix the typo"))
        edit = {"path": "greet.py", "edits": [{"old": "Helo", "new": "Hello"}]}
        app.main.emit(tool_started("edit_file", edit, "e1"))
        app.main.emit(
            PermissionRequested(
                call_id="e1",
                tool="edit_file",
                title="edit_file  greet.py",
                details=EDIT_DIFF,
            )
        )
        await settle(pilot, app, idle=False)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_cancelled_call(snap_compare, fixed_folder: Path) -> None:
    app = make_app(ScriptedModel(), fixed_folder)

    async def run_before(pilot) -> None:
        await ready(pilot)
        app.main.emit(TurnStarted(turn=1, text="serve the site"))
        app.main.emit(tool_started("bash", {"command": "python3 -m http.server"}, "s1"))
        app.main.emit(
            ToolCallFinished(
                call_id="s1",
                tool="bash",
                status="cancelled",
                output="Serving HTTP on 0.0.0.0 port 8000 ...\n[error: cancelled]",
                elapsed=2.5,
            )
        )
        app.main.emit(
            TurnEnded(
                turn=1,
                counters=Counters(commands=1),
                elapsed=2.6,
                usage=Usage(120, 30),
                stop_reason="cancelled",
            )
        )
        await settle(pilot, app)
        await pilot.press("ctrl+o")
        await settle(pilot, app)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_child_agent_under_its_header(snap_compare, fixed_folder: Path) -> None:
    app = make_app(ScriptedModel(), fixed_folder)

    async def run_before(pilot) -> None:
        await ready(pilot)
        child = "reviewer"
        for event in [
            TurnStarted(turn=1, text="ask the reviewer to check greet.py"),
            ToolCallStarted(
                call_id="a1",
                tool="ask_agent",
                title="ask_agent  reviewer",
                kind="other",
                arguments={},
            ),
            AgentStarted(
                name=child,
                title="review",
                model="qwen2.5-coder:7b",
                provider="Ollama",
                asked_by="mm",
                agent=child,
            ),
            tool_started("read_file", {"path": "greet.py"}, "k1", agent=child),
            ToolCallFinished(
                call_id="k1", tool="read_file", status="ok", output="...", elapsed=0.1, agent=child
            ),
            text_delta("greet.py has a typo: `Helo` should be `Hello`.", agent=child),
            AgentFinished(
                name=child,
                title="review",
                model="qwen2.5-coder:7b",
                provider="Ollama",
                asked_by="mm",
                agent=child,
            ),
            ToolCallFinished(
                call_id="a1",
                tool="ask_agent",
                status="ok",
                output="reviewer answered (46 characters)",
                elapsed=3.0,
            ),
        ]:
            app.main.emit(event)
        await settle(pilot, app, idle=False)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_80_by_24(snap_compare, fixed_folder: Path) -> None:
    app = make_app(tool_turn_model(), fixed_folder, notes=(DEMO_NOTE,))

    async def run_before(pilot) -> None:
        await ready(pilot)
        await send(pilot, "do three things")

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_queued_request(snap_compare, fixed_folder: Path) -> None:
    """A request sent while a turn runs waits, said as queued, under the running tool line."""
    model = ScriptedModel(call("bash", {"command": "sleep 30"}), say("done"), say("then"))
    app = make_app(model, fixed_folder)

    async def run_before(pilot) -> None:
        await ready(pilot)
        await pilot.press(*"run the long job", "enter")
        await until(
            lambda: any(isinstance(i, ToolItem) for i in app.main.transcript.items),
            "the call",
            pilot=pilot,
        )
        await settle(pilot, app, idle=False)
        await pilot.press(*"and then this", "enter")
        await settle(pilot, app, idle=False)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_permission_box_at_80_by_24(snap_compare, fixed_folder: Path) -> None:
    """The a/s/r/n choices stay in view on the smallest common terminal."""
    command = "python -m pytest -q tests/test_greet.py && git commit -am 'fix the typo'"
    app = make_app(ScriptedModel(call("bash", {"command": command})), fixed_folder, yolo=False)

    async def run_before(pilot) -> None:
        await ready(pilot)
        await pilot.press(*"run the tests and commit", "enter")
        await until(lambda: app.main.box.request is not None, "the question", pilot=pilot)
        await settle(pilot, app, idle=False)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_model_list(snap_compare, fixed_folder: Path) -> None:
    """`/model`: the server's models over the window, each with its context window, the one in
    use marked and highlighted."""
    from support.model_list import MODELS, model_server, open_model_list

    from mm_tui.engine.provider import OpenAIProvider

    with model_server() as scripted:
        client = OpenAIProvider(scripted.base_url, "small-coder", provider="lmstudio", retries=0)
        app = make_app(client, fixed_folder)

        async def run_before(pilot) -> None:
            await ready(pilot)
            await open_model_list(pilot, app, len(MODELS))
            await pilot.pause()

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_plan_mode(snap_compare, fixed_folder: Path) -> None:
    """Plan mode: its badge in the header, said in the transcript once switched to."""
    app = make_app(ScriptedModel(), fixed_folder, yolo=False)

    async def run_before(pilot) -> None:
        await ready(pilot)
        await pilot.press("shift+tab", "shift+tab")  # ask -> auto -> plan
        await settle(pilot, app)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_task_list_under_the_header(snap_compare, fixed_folder: Path) -> None:
    """The model's task list (the todo tool) under the header, its current step marked."""
    steps = [
        {"step": "read greet.py and its test", "state": "done"},
        {"step": "fix the typo in greet()", "state": "in_progress"},
        {"step": "run the tests", "state": "pending"},
    ]
    app = make_app(ScriptedModel(call("todo", {"steps": steps}), say("Fixing it.")), fixed_folder)

    async def run_before(pilot) -> None:
        await ready(pilot)
        await send(pilot, "fix the typo")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_undo_box(snap_compare, fixed_folder: Path) -> None:
    """`/undo` after a turn whose command edited, deleted and created files: the plan in its
    box over the window (restore, bring back, delete), with the keys that answer it."""
    from mm_tui.window.screens.undo import UndoScreen

    script = "echo '# changed' >> greet.py && rm README.md && mkdir out && echo x > out/new.txt"
    app = make_app(
        ScriptedModel(call("bash", {"command": script}), say("Done.")), fixed_folder, yolo=True
    )

    async def run_before(pilot) -> None:
        await ready(pilot)
        await send(pilot, "change the files")
        await until(lambda: len(app.main.engine.session.turns) == 1, "the turn's end", pilot=pilot)
        await pilot.press(*"/undo", "enter")  # the box waits for an answer: no settling
        await until(
            lambda: isinstance(app.screen, UndoScreen) and app.screen.query("#undo-plan"),
            "the /undo box",
            pilot=pilot,
        )
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
