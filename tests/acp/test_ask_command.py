"""`/ask AGENT …` in line mode and in the window, and `mm --ask AGENT "…"`: the same machinery
as ask_agent, recorded in the history as a /ask exchange. The asked agent is always the real
`mm -acp` on a scripted server; line mode and `mm --ask` run as the real program."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from support.ask_helpers import CHILD_MODEL, write_agent
from support.events import text_delta, tool_started
from support.processes import alive
from support.program import mm
from support.scripted_model import ScriptedModel, say
from support.scripted_model import call as scripted_call
from support.scripted_server import Reply, ScriptedServer, call, silence_after, text_chunks
from support.session_helpers import journal_files, sessions_of
from support.session_helpers import saved as saved_session
from support.trusting import trust_project_file
from support.waiting import await_until
from support.window_helpers import make_app, screen_text, settle

from mm_tui.core.events import AgentFinished, AgentStarted, ToolCallFinished
from mm_tui.line.printer import LinePrinter
from mm_tui.tools.ask_agent import split_ask
from mm_tui.window.transcript.store import RecapItem


@pytest.fixture
def child_server():
    with ScriptedServer(models=[CHILD_MODEL]) as server:
        yield server


def configure(work: Path, child_server: ScriptedServer, **entry: object) -> None:
    """This agent's project config names `helper`, an agent file on the child's server."""
    write_agent(
        work / "helper.yaml",
        child_server,
        acp={"title": "reviewer"},
        sessionsDir=str(work.parent / "child-sessions"),  # this agent's sessions alone here
    )
    lines = ["mmConfigs:", "  helper:", "    config: helper.yaml"]
    lines += [f"    {key}: {json.dumps(value)}" for key, value in entry.items()]
    (work / ".mm").mkdir(exist_ok=True)
    (work / ".mm" / "config.yaml").write_text("\n".join(lines) + "\n")
    trust_project_file(work, work.parent / "home")  # the `work` fixture's home


def exchanges(work: Path) -> list[list[dict]]:
    """The histories of this agent's session files (its system message left out)."""
    return [
        saved_session(p.parent, p.name.removesuffix(".jsonl"))["messages"][1:]
        for p in journal_files(sessions_of(work, work.parent / "home"))
    ]


# --------------------------------------------------------------------------- line mode printing


def test_line_mode_prints_the_asked_agent_line_then_its_output() -> None:
    out = io.StringIO()
    printer = LinePrinter(Console(file=out, width=120, color_system=None), 5, lambda r: None)
    prompt = "review greet.py\nand say what you think"
    printer(tool_started("ask_agent", {"agent": "helper", "prompt": prompt}))
    printer(
        AgentStarted(
            name="helper",
            title="reviewer",
            model="tiny",
            provider="Ollama",
            asked_by="mm",
            prompt=prompt,
            agent="helper",
        )
    )
    printer(text_delta("Looks fine.", agent="helper"))
    printer(
        AgentFinished(
            name="helper", title="reviewer", model="tiny", provider="Ollama", agent="helper"
        )
    )
    printer(
        ToolCallFinished(
            call_id="c1",
            tool="ask_agent",
            status="ok",
            output="helper answered (11 characters)",
            elapsed=1.0,
        )
    )
    printer(text_delta("The reviewer agrees."))
    assert out.getvalue().splitlines() == [
        "🗣 ask_agent: helper (Ollama/tiny) — review greet.py",
        "Looks fine.",
        "    helper answered (11 characters)",
        "The reviewer agrees.",
    ]


def test_split_ask() -> None:
    assert split_ask(" helper  review the\nwhole thing ") == ("helper", "review the\nwhole thing")
    assert split_ask("helper") == ("helper", "")
    assert split_ask("   ") is None


# --------------------------------------------------------------------------- mm --ask


def test_mm_ask_prints_the_exchange_and_records_it(work: Path, child_server) -> None:
    configure(work, child_server)
    child_server.script(
        Reply(tool_calls=[call("bash", {"command": "echo checked"})]), Reply("All tests pass.")
    )
    result = mm(
        "--ask",
        "helper",
        "run the tests\nthen report",
        cwd=work,
        home=work.parent / "home",
        timeout=90,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"🗣 ask_agent: helper (127.0.0.1/{CHILD_MODEL}) — run the tests"
    assert lines[1] == "[helper] 🛠️  bash: echo checked"
    assert lines[2] == "    checked"
    assert lines[3] == "All tests pass."
    assert re.search(r"\d+\.\ds$", lines[-1])  # the recap: the exchange's time
    assert child_server.requests[0].messages[-1]["content"] == "run the tests\nthen report"
    (history,) = exchanges(work)
    assert history == [
        {"role": "user", "content": "/ask helper run the tests\nthen report"},
        {"role": "assistant", "content": "All tests pass."},
    ]


def test_mm_ask_rejects_a_call_that_would_ask(work: Path, child_server) -> None:
    configure(work, child_server, yolo=False)
    child_server.script(
        Reply(tool_calls=[call("bash", {"command": "rm -rf build"})]), Reply("I could not.")
    )
    result = mm("--ask", "helper", "clean up", cwd=work, home=work.parent / "home", timeout=90)
    assert result.returncode == 0, result.stderr
    assert "🔐 helper · bash  rm -rf build: rejected (mm --ask does not ask)" in result.stdout
    assert child_server.requests[1].messages[-1]["content"] == "[command rejected by the user]"
    assert "I could not." in result.stdout


def test_mm_ask_errors_exit_non_zero(work: Path, child_server) -> None:
    configure(work, child_server)
    result = mm("--ask", "nobody", "hello", cwd=work, home=work.parent / "home", timeout=90)
    assert result.returncode == 1
    assert '[ask_agent: unknown agent "nobody" — agents: helper]' in result.stdout
    (history,) = exchanges(work)
    assert history == [
        {"role": "user", "content": "/ask nobody hello"},
        {"role": "assistant", "content": '[ask_agent: unknown agent "nobody" — agents: helper]'},
    ]
    empty = mm("--ask", "helper", " ", cwd=work, home=work.parent / "home", timeout=90)
    assert empty.returncode == 1
    assert "[ask_agent: the prompt is empty — say what helper must do]" in empty.stdout
    assert child_server.requests == []


# --------------------------------------------------------------------------- line mode REPL


def test_line_mode_ask_command(work: Path, child_server) -> None:
    configure(work, child_server)
    child_server.script(Reply("Looks fine to me."))
    with ScriptedServer(Reply("Good to hear."), models=["parent-model"]) as parent:
        result = mm(
            "--line",
            "--base-url",
            parent.base_url,
            "--model",
            "parent-model",
            cwd=work,
            home=work.parent / "home",
            timeout=90,
            stdin="/ask\n/ask helper review greet.py\nwhat did it say?\n/quit\n",
        )
        assert result.returncode == 0, result.stderr
        out = result.stdout
        assert (
            "usage: /ask AGENT request — hands the request to an agent of mmConfigs (helper)" in out
        )
        assert f"🗣 ask_agent: helper (127.0.0.1/{CHILD_MODEL}) — review greet.py" in out
        assert "Looks fine to me." in out
        assert "Good to hear." in out
        # the next turn's model sees the /ask exchange as part of the conversation
        sent = parent.requests[0].messages
        assert sent[1:] == [
            {"role": "user", "content": "/ask helper review greet.py"},
            {"role": "assistant", "content": "Looks fine to me."},
            {"role": "user", "content": "what did it say?"},
        ]


# --------------------------------------------------------------------------- window


async def test_window_ask_command_shows_the_agent_and_records_the_exchange(
    work: Path, child_server
) -> None:
    write_agent(work / "helper.yaml", child_server, acp={"title": "reviewer"})
    child_server.script(
        Reply(tool_calls=[call("bash", {"command": "echo looked"})]), Reply("No typo left.")
    )
    app = make_app(
        ScriptedModel(),
        work,
        frozen=True,
        mmConfigs={"helper": {"config": str(work / "helper.yaml")}},
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press(*"/ask helper check greet.py")
        await pilot.press("enter")
        await settle(pilot, app, timeout=60)
        text = screen_text(app)
        assert "/ask helper check greet.py" in text
        assert f"mm [reviewer] · {CHILD_MODEL} @ 127.0.0.1 · asked by mm" in text
        assert "‣ helper · bash  echo looked" in text
        assert "‣ mm [reviewer]\nNo typo left." in text
        messages = app.engine.session.messages
        assert messages[-2:] == [
            {"role": "user", "content": "/ask helper check greet.py"},
            {"role": "assistant", "content": "No typo left."},
        ]
        pid = app.engine.registry.get("ask_agent").pid("helper")
        assert alive(pid)
        await pilot.press(*"/ask")
        await pilot.press("enter")
        await settle(pilot, app)
        assert "usage: /ask AGENT request" in screen_text(app)
    assert not alive(pid)  # the window closed: its children stopped


async def test_window_ask_agent_line_says_how_long_the_answer_was(work: Path, child_server) -> None:
    write_agent(work / "helper.yaml", child_server)  # no title: it goes by its mmConfigs name
    child_server.script(Reply("Twelve chars"))
    model = ScriptedModel(
        scripted_call("ask_agent", {"agent": "helper", "prompt": "count\nto twelve"}),
        say("It answered."),
    )
    app = make_app(model, work, mmConfigs={"helper": {"config": "helper.yaml"}})
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press(*"ask the helper")
        await pilot.press("enter")
        await settle(pilot, app, timeout=60)
        line = next(i for i in app.main.transcript.items if getattr(i, "tool", None) == "ask_agent")
        assert line.title == "ask_agent  helper — count"
        assert (line.status, line.output) == ("ok", "helper answered (12 characters)")
        text = screen_text(app)
        assert f"mm [helper] · {CHILD_MODEL} @ 127.0.0.1 · asked by mm" in text
        assert "‣ mm [helper]\nTwelve chars" in text
        tool_message = next(m for m in app.engine.session.messages if m["role"] == "tool")
        assert tool_message["content"] == "Twelve chars"


async def test_window_escape_cancels_an_ask(work: Path, child_server) -> None:
    write_agent(work / "helper.yaml", child_server, acp={"title": "reviewer"})
    child_server.script(silence_after(1, [text_chunks("Half of it")[0], *text_chunks("x")]))
    app = make_app(ScriptedModel(), work, mmConfigs={"helper": {"config": "helper.yaml"}})
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press(*"/ask helper take your time")
        await pilot.press("enter")
        shown = await await_until(lambda: "Half of it" in screen_text(app), 30, pilot=pilot)
        assert shown, "the child's text never appeared"
        await pilot.press("escape")
        await settle(pilot, app, timeout=30)
        assert app.engine.session.messages[-2:] == [
            {"role": "user", "content": "/ask helper take your time"},
            {
                "role": "assistant",
                "content": "Half of it\n[ask_agent: helper stopped before finishing: cancelled]",
            },
        ]
        recap = [i for i in app.main.transcript.items if isinstance(i, RecapItem)][-1]
        assert recap.stop_reason == "cancelled"
        assert app.engine.session.turns[-1].stop_reason == "cancelled"
