"""SIGTERM and SIGHUP stop mm as closing its input does, in every mode: the command a tool was
running stops with it (it used to outlive mm, re-parented, still writing files), the session is
saved, and mm exits with 128 + the signal's number.

Each test runs the real mm on the scripted server, whose model runs a command that writes a line
to a file ten times a second and never ends; once the command is running, mm gets the signal."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import acp
import pytest
from support.env import clean_env, home_variables
from support.processes import cmdline, host_pid, mm_above
from support.program import MM
from support.scripted_server import Reply, ScriptedServer, call
from support.session_helpers import sessions_of
from support.terminal import mm_in_tmux, tmux, until_screen
from support.waiting import wait_until

FOREVER = "echo $$ > shell.pid; while :; do echo tick >> ticks.txt; sleep 0.1; done"


def command_turn() -> Reply:
    return Reply(tool_calls=[call("bash", {"command": FOREVER})])


def gone(pid: int) -> bool:
    """Whether a process has ended (a zombie that nobody reaps has ended too)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def running_command(cwd: Path) -> int:
    """The pid of the model's command once it runs and writes, as this process numbers it (its
    launcher may number it otherwise, in a PID namespace of its own)."""
    wait_until(lambda: (cwd / "ticks.txt").exists() and (cwd / "shell.pid").read_text(), 30)
    shell = host_pid(int((cwd / "shell.pid").read_text()), cwd)
    assert not gone(shell), "the command runs"
    return shell


def assert_stopped(cwd: Path, shell: int) -> None:
    """The command is gone and writes no more."""
    assert wait_until(lambda: gone(shell), 10), "the command did not stop"
    size = (cwd / "ticks.txt").stat().st_size
    time.sleep(0.3)  # three ticks' time: the file would have grown
    assert (cwd / "ticks.txt").stat().st_size == size


def project_in(home: Path) -> Path:
    """The project mm works in, a folder of the home folder: a command may write at the top of
    a project, not at the top of the home folder (which holds mm's state, out of its reach)."""
    project = home / "project"
    project.mkdir()
    return project


def saved_call(cwd: Path) -> dict:
    """The session file's record of the bash call's result: the turn was put in order."""
    files = list(sessions_of(cwd, cwd.parent).glob("*.jsonl"))
    assert len(files) == 1, files
    records = [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]
    results = [r for r in records if '"tool_call_id"' in json.dumps(r)]
    assert results, records
    return results[-1]


def on(server: ScriptedServer) -> list[str]:
    return ["--base-url", server.base_url, "--model", "m"]


@pytest.mark.parametrize(
    ("mode", "signum"),
    [("-p", signal.SIGTERM), ("-p", signal.SIGHUP), ("--line", signal.SIGTERM)],
)
def test_a_stop_signal_stops_the_running_command(
    tmp_path: Path, mode: str, signum: signal.Signals
) -> None:
    project = project_in(tmp_path)
    with ScriptedServer(command_turn()) as server:
        argv = [*MM, *on(server), "--yolo"]
        argv += ["-p", "run it"] if mode == "-p" else ["--line"]
        proc = subprocess.Popen(
            argv,
            cwd=project,
            env=clean_env(tmp_path),
            # line mode: kept open (the end of input is not what stops it); -p reads what is
            # piped in, so it gets none
            stdin=subprocess.PIPE if mode == "--line" else subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            if mode == "--line":
                assert proc.stdin is not None
                proc.stdin.write(b"run it\n")
                proc.stdin.flush()
            shell = running_command(project)
            proc.send_signal(signum)
            code = proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert code == 128 + signum, proc.stderr.read() if proc.stderr else ""
    assert_stopped(project, shell)
    assert saved_call(project)


async def test_sigterm_to_mm_acp_stops_the_running_command(tmp_path: Path) -> None:
    from support.acp_helpers import MODEL, Recorder

    project = project_in(tmp_path)
    with ScriptedServer(command_turn()) as server:
        async with acp.spawn_agent_process(
            Recorder(),
            *MM,
            "-acp",
            "--yolo",
            "--base-url",
            server.base_url,
            "--model",
            MODEL,
            env=clean_env(tmp_path),
            cwd=project,
        ) as (conn, process):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(project), mcp_servers=[])
            prompt = asyncio.ensure_future(
                conn.prompt(
                    session_id=session.session_id,
                    prompt=[acp.text_block("run it")],
                )
            )
            shell = await asyncio.to_thread(running_command, project)
            process.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(process.wait(), 30)
            prompt.cancel()
    assert code == 128 + signal.SIGTERM
    assert_stopped(project, shell)


@pytest.mark.slow  # the real window in tmux: a few seconds
def test_closing_the_terminal_stops_the_window_and_its_command(tmp_path: Path) -> None:
    """Closing the terminal sends SIGHUP to the window's process: the command stops too."""
    project = project_in(tmp_path)
    home = home_variables(tmp_path)
    with ScriptedServer(command_turn()) as server:
        with mm_in_tmux(project, "hangup", *on(server), "--yolo", env=home) as session:
            tmux("send-keys", "-t", session, "run it", "Enter")
            shell = running_command(project)
            mm_pid = mm_above(shell)
            assert any("mm" in part for part in cmdline(mm_pid)), cmdline(mm_pid)
            tmux("kill-session", "-t", session)  # the terminal goes: SIGHUP
            assert wait_until(lambda: gone(mm_pid), 30), "mm did not end after SIGHUP"
    assert_stopped(project, shell)
    if os.path.exists(sessions_of(project, tmp_path)):
        assert saved_call(project)


def test_a_stop_signal_ends_mm_even_when_its_shutdown_hangs() -> None:
    """The deadline behind a stop signal (`exit_by`): a process whose shutdown waits for ever
    (a closed terminal left Textual's output thread blocked, under load) still ends, with
    128 + the signal's number, once STOP_GRACE has passed (here shortened)."""
    code = (
        "import threading\n"
        "from mm_tui.core import stop_signals\n"
        "stop_signals.exit_by(0.3, 129)\n"
        "threading.Event().wait()  # a shutdown that never ends\n"
    )
    done = subprocess.run([sys.executable, "-c", code], timeout=20, check=False)
    assert done.returncode == 129  # the deadline's code: nothing else ends that process


async def test_the_window_sets_the_deadline_when_a_stop_signal_comes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window quits on SIGHUP as /quit does, and sets the deadline for the process."""
    from support.scripted_model import ScriptedModel
    from support.window_helpers import make_app, settle

    from mm_tui.core import stop_signals

    deadlines: list[tuple[float, int]] = []
    monkeypatch.setattr(stop_signals, "exit_by", lambda s, c: deadlines.append((s, c)))
    app = make_app(ScriptedModel(), tmp_path)
    async with app.run_test() as pilot:
        await settle(pilot, app)
        os.kill(os.getpid(), signal.SIGHUP)
        await pilot.pause(0.2)
    assert deadlines == [(stop_signals.STOP_GRACE, 128 + signal.SIGHUP)]


def test_a_sigcont_that_follows_no_suspension_reaches_nothing() -> None:
    """A closing terminal sends SIGCONT with SIGHUP, and Textual's driver took any SIGCONT as a
    return from Ctrl+Z: it started application mode again, whose second output thread died on
    the closed terminal and left the shutdown waiting for ever. Real signals, to this process."""
    from mm_tui.core.stop_signals import resume_only_after_suspend

    seen: list[str] = []
    before = signal.getsignal(signal.SIGTSTP), signal.getsignal(signal.SIGCONT)
    signal.signal(signal.SIGTSTP, lambda _s, _f: seen.append("suspend"))
    signal.signal(signal.SIGCONT, lambda _s, _f: seen.append("resume"))
    try:
        resume_only_after_suspend()
        os.kill(os.getpid(), signal.SIGCONT)
        assert seen == []
        os.kill(os.getpid(), signal.SIGTSTP)
        os.kill(os.getpid(), signal.SIGCONT)
        assert seen == ["suspend", "resume"]
        os.kill(os.getpid(), signal.SIGCONT)
        assert seen == ["suspend", "resume"]
    finally:
        signal.signal(signal.SIGTSTP, before[0])
        signal.signal(signal.SIGCONT, before[1])


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


@pytest.mark.slow  # the real window in tmux: a few seconds
def test_a_stray_sigcont_leaves_the_window_as_it_was(tmp_path: Path) -> None:
    """`kill -CONT` on a window that was never suspended: before, Textual started application
    mode again, with a second output thread and a second input thread reading the terminal."""
    with ScriptedServer(Reply(text="all is well")) as server:
        with mm_in_tmux(tmp_path, "cont", *on(server)) as session:
            pid = int(tmux("display", "-p", "-t", session, "#{pane_pid}").stdout)  # mm: exec'd
            assert "bin/mm" in Path(f"/proc/{pid}/cmdline").read_text()
            time.sleep(1.0)  # the threads of start-up (loading modules) are done
            count = threads(pid)
            os.kill(pid, signal.SIGCONT)
            time.sleep(0.5)
            assert threads(pid) == count
            tmux("send-keys", "-t", session, "hello", "Enter")
            until_screen(session, "all is well")
            tmux("kill-session", "-t", session)
            assert wait_until(lambda: gone(pid), 30), "mm did not end after SIGHUP"
