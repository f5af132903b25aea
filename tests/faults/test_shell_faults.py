"""Faults of the shell tool, through the whole path: the model (the scripted server on
127.0.0.1) asks for the command, the engine or the real `mm` runs it, and mm is still usable
afterwards (the next prompt works, the session file loads, no process is left behind).

6. a cancelled command: its whole process group is gone within 2 s, the output kept;
7. commands that wait for input end at once, even in a real terminal;
8. huge outputs: memory bounded, both ends kept with the marker, valid UTF-8.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from support.engine import make_engine, of, turn
from support.env import clean_env
from support.fault_parts import next_prompt_works, session_loads
from support.processes import cmdline, group_members, tool_groups
from support.program import MM
from support.scripted_server import Reply, ScriptedServer, call
from support.session_helpers import journal_files, sessions_of
from support.terminal import env_prefix, tmux_session
from support.waiting import wait_until

from mm_tui.core.events import ToolCallFinished
from mm_tui.core.sandbox import landlock_abi
from mm_tui.tools.bash import QUIET_ENV, TOO_LARGE

SLEEPERS = "sh -c 'sleep 60 & sleep 60 & wait'"

pytestmark = pytest.mark.usefixtures("no_process_left")


def sleepers_of(pgid: int) -> list[int]:
    return [pid for pid in group_members(pgid) if cmdline(pid) == ["sleep", "60"]]


def running_group(parent: int, timeout: float = 10) -> int:
    """The process group of the command the bash tool runs under `parent`, once both of its
    `sleep 60` are running."""
    found: list[int] = []

    def ready() -> bool:
        found[:] = [g for g in tool_groups(parent) if len(sleepers_of(g)) == 2]
        return bool(found)

    assert wait_until(ready, timeout), "the command never started"
    return found[0]


# --- 6. cancelling a command --------------------------------------------------------------------


async def test_cancel_kills_the_whole_group_and_keeps_the_partial_output(tmp_path: Path) -> None:
    command = f"echo partial output; {SLEEPERS}"
    with ScriptedServer(Reply(tool_calls=[call("bash", {"command": command}, id="c1")])) as server:
        engine = make_engine(tmp_path, server)
        events = []
        task = asyncio.create_task(engine.run_turn("start the sleepers", events.append))
        pgid = await asyncio.to_thread(running_group, os.getpid())
        assert len(group_members(pgid)) >= 3  # the shell(s) and the two sleeps
        assert engine.cancel()
        end = await task  # a cancel that did not stop the sleepers would end otherwise
        assert await asyncio.to_thread(wait_until, lambda: not group_members(pgid), 10), (
            "the process group outlived the cancel"
        )
        assert end.stop_reason == "cancelled"
        (finished,) = of(events, ToolCallFinished)
        assert finished.status == "cancelled"
        assert finished.output == "partial output\n[error: cancelled]"
        assert len(server.requests) == 1  # nothing went to the model after the cancel
        saved = session_loads(engine)
        assert saved.messages[-1] == {
            "role": "tool",
            "tool_call_id": "c1",
            "content": "partial output\n[error: cancelled]",
        }
        await next_prompt_works(engine, server)
        await engine.aclose()


def test_ctrl_c_in_line_mode_kills_the_group_and_the_next_prompt_works(tmp_path: Path) -> None:
    command = f"echo partial output; {SLEEPERS}"
    with ScriptedServer(
        Reply(tool_calls=[call("bash", {"command": command}, id="c1")]), "still here"
    ) as server:
        proc = subprocess.Popen(
            [*MM, "--line", "--base-url", server.base_url, "--model", "m"],
            cwd=tmp_path,
            env=clean_env(tmp_path),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdin is not None
            proc.stdin.write("start the sleepers\n")
            proc.stdin.flush()
            pgid = running_group(proc.pid, timeout=20)
            proc.send_signal(signal.SIGINT)  # Ctrl-C
            assert wait_until(lambda: not group_members(pgid), 2), "the group outlived Ctrl-C"
            out, err = proc.communicate("and now?\n", timeout=30)  # then end of input
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0, err
        assert "    partial output\n    [error: cancelled]\n" in out
        assert "still here" in out.split("[error: cancelled]")[1]
        assert "Traceback" not in err
        assert [m["role"] for m in server.requests[-1].messages][-3:] == [
            "assistant",
            "tool",
            "user",
        ]
    (path,) = journal_files(sessions_of(tmp_path))
    saved = session_loads(path.parent, path.stem)
    tools = [m for m in saved.messages if m["role"] == "tool"]
    assert tools == [
        {"role": "tool", "tool_call_id": "c1", "content": "partial output\n[error: cancelled]"}
    ]
    assert saved.messages[-1] == {"role": "assistant", "content": "still here"}


# --- 7. commands that wait for input -------------------------------------------------------------

# /dev/tty: the sandbox refuses it where Landlock works; without, there is no controlling terminal
TTY_REFUSED = (
    "cat: /dev/tty: Permission denied\n[exit code: exit status 1]\n[sandbox: refused by mm's"
    if landlock_abi()[0] >= 1
    else "cat: /dev/tty: No such device or address\n[exit code: exit status 1]"
)
WAITERS = {
    "read x": "[exit code: exit status 1]",
    "python3 -c 'input()'": "EOFError: EOF when reading a line\n[exit code: exit status 1]",
    "cat /dev/tty": TTY_REFUSED,
    "git commit": "Aborting commit due to empty commit message.\n[exit code: exit status 1]",
}
SHOW_ENV = (
    "for v in EDITOR VISUAL GIT_EDITOR PAGER GIT_PAGER GIT_TERMINAL_PROMPT; "
    'do echo "$v=${!v}"; done'
)


def fresh_repo_with_a_staged_file(folder: Path) -> None:
    env = clean_env(folder, GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    for args in (
        ["init", "-q"],
        ["config", "user.name", "Test"],
        ["config", "user.email", "test@example.com"],
    ):
        subprocess.run(["git", *args], cwd=folder, check=True, env=env)
    (folder / "a.txt").write_text("hello\n")
    subprocess.run(["git", "add", "a.txt"], cwd=folder, check=True, env=env)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
async def test_commands_that_wait_for_input_end_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The person's own settings would open an editor, a pager, a password prompt.
    for name, value in {
        "EDITOR": "vi",
        "VISUAL": "vi",
        "GIT_EDITOR": "vi",
        "PAGER": "less",
        "GIT_PAGER": "less",
        "GIT_TERMINAL_PROMPT": "1",
    }.items():
        monkeypatch.setenv(name, value)
    fresh_repo_with_a_staged_file(tmp_path)
    commands = [*WAITERS, SHOW_ENV]
    calls = [call("bash", {"command": c}, id=f"c{i}") for i, c in enumerate(commands)]
    with ScriptedServer(Reply(tool_calls=calls), "all done") as server:
        engine = make_engine(tmp_path, server)
        # a command that waited for input would end by its timeout, with another output
        events = await turn(engine, "try them")
        assert events[-1].stop_reason == "end_turn"
        finished = {e.call_id: e for e in of(events, ToolCallFinished)}
        for i, (command, ending) in enumerate(WAITERS.items()):
            result = finished[f"c{i}"]
            output = result.output
            # the sandbox's line follows the refusal of /dev/tty
            found = ending in output if ending is TTY_REFUSED else output.endswith(ending)
            assert found, (command, output)
        seen = finished[f"c{len(WAITERS)}"].output.splitlines()
        assert seen == [
            f"{name}={QUIET_ENV[name]}"
            for name in ("EDITOR", "VISUAL", "GIT_EDITOR", "PAGER", "GIT_PAGER")
        ] + ["GIT_TERMINAL_PROMPT=0"]
        assert QUIET_ENV["EDITOR"] == "true" and QUIET_ENV["PAGER"] == "cat"
        # Nothing was committed, and the repository is as it was.
        log = subprocess.run(["git", "log"], cwd=tmp_path, capture_output=True, text=True)
        assert log.returncode != 0
        session_loads(engine)
        await next_prompt_works(engine, server)
        await engine.aclose()


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_cat_dev_tty_in_a_real_terminal_does_not_read_the_keyboard(tmp_path: Path) -> None:
    """mm in a terminal: a command that opens /dev/tty would read the person's keyboard (and
    hang until the timeout) if it shared mm's controlling terminal."""
    command = "cat /dev/tty; awk '{print \"tty_nr=\" $7}' /proc/self/stat"
    out = tmp_path / "out.txt"
    with ScriptedServer(
        Reply(tool_calls=[call("bash", {"command": command}, id="c1")]), "done"
    ) as server:
        env = env_prefix(clean_env(tmp_path, TERM="xterm"))
        mm = shlex.join([*MM, "--base-url", server.base_url, "--model", "m", "-p", "go"])
        script = f"cd {tmp_path} && {env} {mm} > {out} 2>&1; echo EXIT=$? >> {out}"
        with tmux_session("fault-tty", script):
            assert wait_until(lambda: out.exists() and "EXIT=" in out.read_text(), 60)
    text = out.read_text()
    assert "EXIT=0" in text, text
    assert "    " + TTY_REFUSED.split("\n")[0] in text
    assert "    tty_nr=0" in text  # no controlling terminal
    # (a cat that read the keyboard would have ended by the 30 s timeout, without the refusal)
    (path,) = journal_files(sessions_of(tmp_path))
    session_loads(path.parent, path.stem)


# --- 8. huge outputs -----------------------------------------------------------------------------

RANDOM_50MB = "head -c 50000000 /dev/urandom"
SEQ = "seq 10000000"
SEQ_TAIL = "9999998\n9999999\n10000000\n"


def peak_rss_of_mm(tmp_path: Path, commands: list[str]) -> tuple[int, subprocess.CompletedProcess]:
    """Run the real `mm -p` on a turn that runs `commands`; its peak resident memory in KiB (as
    the kernel counts it for the finished process) and what it printed."""
    folder = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    calls = [call("bash", {"command": c}, id=f"c{i}") for i, c in enumerate(commands)]
    with ScriptedServer(Reply(tool_calls=calls), "done") as server:
        out_path = folder / "stdout"
        with open(out_path, "wb") as out:
            proc = subprocess.Popen(
                [*MM, "--base-url", server.base_url, "--model", "m", "-p", "go"],
                cwd=folder,
                env=clean_env(folder),
                stdout=out,
                stderr=subprocess.STDOUT,
            )
            try:
                _, status, usage = os.wait4(proc.pid, 0)
            finally:
                proc.returncode = -1  # reaped here, not by Popen
        returncode = os.waitstatus_to_exitcode(status)
        requests = server.requests
    result = subprocess.CompletedProcess(proc.args, returncode, out_path.read_bytes(), b"")
    result.folder = folder  # type: ignore[attr-defined]
    result.requests = requests  # type: ignore[attr-defined]
    return usage.ru_maxrss, result


def test_huge_outputs_keep_mm_memory_bounded(tmp_path: Path) -> None:
    baseline, small = peak_rss_of_mm(tmp_path, ["echo small", "echo small"])
    assert small.returncode == 0
    peak, result = peak_rss_of_mm(tmp_path, [RANDOM_50MB, SEQ])
    assert result.returncode == 0, result.stdout[-2000:]
    # 130 MB went through the tool; reading it whole would cost several times that.
    growth_mb = (peak - baseline) / 1024
    assert growth_mb < 40, f"mm grew by {growth_mb:.0f} MB"
    result.stdout.decode("utf-8")  # the screen got valid UTF-8
    # What the model got: at most maxOutput characters each, with the marker, valid UTF-8.
    tools = [m for m in result.requests[-1].messages if m["role"] == "tool"]
    assert [t["tool_call_id"] for t in tools] == ["c0", "c1"]
    for tool in tools:
        content = tool["content"]
        head, marker, rest = content.rpartition("\n[... output truncated: ")
        assert marker and len(head) == 30000 and rest.endswith(" more characters ...]")
        content.encode("utf-8")
    assert tools[1]["content"].startswith("1\n2\n3\n")
    (path,) = journal_files(sessions_of(result.folder))  # type: ignore[attr-defined]
    path.read_bytes().decode("utf-8")
    saved = session_loads(path.parent, path.stem)
    assert [m["content"] for m in saved.messages if m["role"] == "tool"] == [
        t["content"] for t in tools
    ]


async def test_huge_outputs_keep_both_ends_with_the_marker(tmp_path: Path) -> None:
    calls = [call("bash", {"command": c}, id=f"c{i}") for i, c in enumerate([RANDOM_50MB, SEQ])]
    with ScriptedServer(Reply(tool_calls=calls), "done") as server:
        engine = make_engine(tmp_path, server, maxOutput=3_000_000)
        events = await asyncio.wait_for(turn(engine, "make noise"), 60)
        assert events[-1].stop_reason == "end_turn"
        noise, seq = (e.output for e in of(events, ToolCallFinished))
        for output in (noise, seq):
            assert output.count(TOO_LARGE) == 1
            head, tail = output.split(f"\n{TOO_LARGE}\n")
            # A MiB from each end: as many characters for seq, fewer for random bytes (an
            # undecodable byte is one U+FFFD, a valid sequence of up to four bytes one character)
            assert 256 * 1024 <= len(head) <= 1024 * 1024
            assert 256 * 1024 <= len(tail) <= 1024 * 1024
            output.encode("utf-8")  # valid UTF-8: no lone surrogate, nothing undecodable
        assert seq.startswith("1\n2\n3\n")
        assert seq.endswith(SEQ_TAIL)
        assert len(seq.split(f"\n{TOO_LARGE}\n")[1]) == 1024 * 1024
        # The model got the same text, and the session file holds it.
        sent = [m for m in server.requests[-1].messages if m["role"] == "tool"]
        assert [m["content"] for m in sent] == [noise, seq]
        saved = session_loads(engine)
        assert [m["content"] for m in saved.messages if m["role"] == "tool"] == [noise, seq]
        await next_prompt_works(engine, server)
        await engine.aclose()
