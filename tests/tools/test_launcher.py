"""The launcher process (core/launcher.py, core/launcher_process.py) on its own: what it does
when a command kills it, the seccomp filter it installs, a rebuilt ruleset's launcher, and what
mm does with a reply it could not have sent (a command that took the launcher over)."""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support.processes import all_pids, cmdline, stat_fields, state
from support.waiting import await_until, wait_until

from mm_tui.config import Settings
from mm_tui.core import launcher as launching
from mm_tui.core import sandbox
from mm_tui.tools.args import BashArgs
from mm_tui.tools.base import ToolContext
from mm_tui.tools.bash import LAUNCHER_GONE, BashTool

ABI, WHY = sandbox.landlock_abi({})
needs_landlock = pytest.mark.skipif(ABI < 1, reason=f"no Landlock here: {WHY}")

SECCOMP_RET_ALLOW = 0x7FFF0000
BPF_RET_K = 0x06
ALLOW_ALL = struct.pack("=HBBI", BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW)
"""The least seccomp program: one instruction, `return ALLOW`."""


async def run(command: str, cwd: Path, tool: BashTool | None = None, **settings: object):
    ctx = ToolContext(cwd=cwd, settings=Settings(**settings))  # type: ignore[arg-type]
    return await (tool or BashTool()).run(BashArgs(command=command), ctx)


@pytest.mark.parametrize("mode", ["auto", "off"])
async def test_a_command_that_kills_its_launcher_fails_and_the_next_one_runs(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if mode == "auto" and ABI < 1:
        pytest.skip(f"no Landlock here: {WHY}")
    # Landlock alone, as for a plain user (in namespaces of its own, a launcher is out of a
    # command's reach: see the next test)
    monkeypatch.setenv(sandbox.NAMESPACES_VARIABLE, "0")
    # the launcher is the shell's parent; it shares the command's domain, so this is allowed
    killed = await run("kill -KILL $PPID; sleep 60", tmp_path, sandbox=mode)
    assert killed.status == "error"
    assert killed.output.endswith(LAUNCHER_GONE), killed.output
    after = await run("echo fine; echo parent=$PPID", tmp_path, sandbox=mode)
    assert after.output.startswith("fine\n"), after.output
    parent = int(after.output.split("parent=")[1].split()[0])
    assert any(a.endswith("launcher_process.py") for a in cmdline(parent))  # a fresh launcher
    assert parent != os.getpid()


@needs_landlock
async def test_a_command_cannot_stop_a_launcher_in_its_own_namespace(tmp_path: Path) -> None:
    if not sandbox.namespaces_wanted():
        pytest.skip("no namespaces for the launcher here (root only)")
    ctx = ToolContext(cwd=tmp_path, settings=Settings())
    confinement = sandbox.confine(ctx.settings.sandbox_config(), tmp_path, dict(os.environ))
    assert confinement.ruleset is not None and confinement.ruleset.hide is not None
    # this launcher itself, whatever the cache does meanwhile (a new entry in a folder the
    # ruleset lists, on a busy machine, rebuilds it and its launcher for later calls)
    launcher = confinement.ruleset.launcher()

    async def shell(command: str) -> str:
        out = tmp_path / "out"
        with out.open("wb") as f:
            argv = ["bash", "-c", command]
            proc = await launching.launch(launcher, argv, stdout=f, stderr=f, cwd=tmp_path)
            await asyncio.wait_for(proc.wait(), 60)
        return out.read_text()

    tried = await shell("for s in KILL TERM HUP INT STOP; do kill -$s 1; done; echo parent=$PPID")
    assert "parent=1" in tried, tried  # the launcher leads the namespace
    assert (await shell("echo still")).startswith("still")
    assert not launcher.gone
    assert stat_fields(launcher.pid) is not None


@needs_landlock
async def test_a_seccomp_filter_given_to_the_launcher_holds_for_its_commands(
    tmp_path: Path,
) -> None:
    launcher = launching.LauncherProcess(seccomp=ALLOW_ALL)
    try:
        status = Path(f"/proc/{launcher.pid}/status").read_text()
        assert "Seccomp:\t2" in status and "NoNewPrivs:\t1" in status
        out = tmp_path / "out"
        with out.open("wb") as f:
            proc = await launching.launch(
                launcher, ["grep", "Seccomp", "/proc/self/status"], stdout=f, cwd=tmp_path
            )
            assert await proc.wait() == 0
        assert "Seccomp:\t2" in out.read_text()
    finally:
        launcher.close(wait=10)


def test_a_malformed_seccomp_filter_is_a_failure_to_confine() -> None:
    with pytest.raises(launching.LauncherFailed) as failed:
        launching.LauncherProcess(seccomp=b"\x06\x00\x00\x00")  # half an instruction
    assert "seccomp failed" in str(failed.value)


async def test_a_launcher_that_says_what_it_could_not_is_dropped(tmp_path: Path) -> None:
    """A command in the launcher's domain may take it over (ptrace) and speak in its name: here
    its socket is taken from it as such a command would (pidfd_getfd, which needs the same
    access as ptrace), and says a pid a second time for a running call. mm drops that launcher
    rather than believe it: the call fails, and the launcher, its end closed, takes its command
    along."""
    launcher = launching.LauncherProcess()
    try:
        out = tmp_path / "out"
        with out.open("wb") as f:
            proc = await launching.launch(launcher, ["sleep", "60"], stdout=f, cwd=tmp_path)
        sleeper = proc.pid
        theirs = _steal_socket(launcher.pid)
        try:
            theirs.send(b"P" + struct.pack("=Ii", proc._ident, 1))  # noqa: SLF001
            assert await await_until(lambda: launcher.gone, 10), "mm kept a lying launcher"
            with pytest.raises(launching.LauncherGone):
                await proc.wait()
        finally:
            theirs.close()
    finally:
        launcher.close(wait=10)
    gone = await asyncio.to_thread(wait_until, lambda: stat_fields(sleeper) is None, 10)
    assert gone, "the command outlived its dropped launcher"


def _steal_socket(pid: int) -> socket.socket:
    """The launcher's end of its socket (its number is in its command line), copied out of it."""
    import ctypes

    number = int(cmdline(pid)[4])
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    try:
        fd = libc.syscall(438, pidfd, number, 0)  # pidfd_getfd
        if fd < 0:
            pytest.skip(f"pidfd_getfd: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(pidfd)
    return socket.socket(fileno=fd)


@needs_landlock
async def test_a_rebuilt_ruleset_gets_a_new_launcher_and_the_old_keeps_its_job(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)  # denied: the home folder is descended, and stamped
    env = {**os.environ, "HOME": str(home)}
    config = sandbox.SandboxConfig()
    first = sandbox.confine(config, tmp_path, env)
    assert first.ruleset is not None
    old = first.ruleset.launcher()
    out = tmp_path / "out"
    with out.open("wb") as f:
        job = await first.start(["sleep", "61"], stdout=f, cwd=tmp_path, env=env)
    (home / "new-entry").mkdir()  # a new entry in a descended folder: a new ruleset
    os.utime(home, ns=(0, stat_mtime(home) + 10**9))
    second = sandbox.confine(config, tmp_path, env)
    assert second.ruleset is not None and second.ruleset is not first.ruleset
    new = second.ruleset.launcher()
    assert new.pid != old.pid and old.retired
    assert stat_fields(old.pid) is not None and job.returncode is None  # keeps its job
    job.kill()
    assert await job.wait() == -9
    # retired and childless: it goes
    assert await asyncio.to_thread(wait_until, lambda: old.gone, 10)


def stat_mtime(path: Path) -> int:
    return path.stat().st_mtime_ns


def test_the_launcher_script_imports_nothing_of_mm() -> None:
    """It runs with -I -S: the standard library only."""
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", f"import runpy; runpy.run_path({launching.SCRIPT!r})"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


async def test_a_launcher_started_from_a_thread_that_ended_keeps_working(tmp_path: Path) -> None:
    """Its parent-death signal fires when the thread that started it ends (mm's thread of a
    language server's loop, say): it checks that mm is still its parent and carries on."""
    started: list[launching.LauncherProcess] = []
    thread = threading.Thread(target=lambda: started.append(launching.LauncherProcess()))
    thread.start()
    thread.join()
    tid = thread.native_id
    (launcher,) = started
    try:
        # the thread is gone for the kernel too: the signal has been sent
        gone = await asyncio.to_thread(
            wait_until, lambda: not Path(f"/proc/self/task/{tid}").exists(), 30
        )
        assert gone
        for word in ("alive", "still"):
            out = tmp_path / word
            with out.open("wb") as f:
                proc = await launching.launch(launcher, ["echo", word], stdout=f, cwd=tmp_path)
                assert await proc.wait() == 0
            assert out.read_text() == f"{word}\n"
        assert not launcher.gone
    finally:
        launcher.close(wait=10)


async def test_a_request_too_large_for_one_message_goes_in_a_memfd(tmp_path: Path) -> None:
    launcher = launching.LauncherProcess()
    try:
        big = ["a" * 100_000] * 4  # more than a socket's buffer holds in one message
        out = tmp_path / "out"
        count = 'echo "$(( ${#1} + ${#2} + ${#3} + ${#4} ))"'
        with out.open("wb") as f:
            argv = ["bash", "-c", count, "bash", *big]
            proc = await launching.launch(launcher, argv, stdout=f, cwd=tmp_path)
            assert await proc.wait() == 0
        assert out.read_text() == "400000\n"
    finally:
        launcher.close(wait=10)


async def test_a_call_that_does_not_wait_for_its_pid_gets_its_end_and_its_failure(
    tmp_path: Path,
) -> None:
    """`launch_sent`, as the bash tool starts its commands: the launcher does not say the pid
    (one reply less), the end and its code arrive, each call gets its own environment though
    an unchanged one is encoded once, and a command that cannot start fails in its wait."""
    launcher = launching.LauncherProcess()
    path = os.environ["PATH"]
    try:
        for value in ("one", "two", "two", "one"):
            out = tmp_path / "out"
            with out.open("wb") as f:
                argv = ["sh", "-c", 'echo "$X"; exit 3']
                env = {"X": value, "PATH": path}
                proc = launching.launch_sent(launcher, argv, stdout=f, cwd=tmp_path, env=env)
                assert await asyncio.wait_for(proc.wait(), 60) == 3
            assert out.read_text() == f"{value}\n"
            assert proc.pid == 0  # never said: a reply `P` would have set it
        missing = launching.launch_sent(launcher, [str(tmp_path / "missing")], cwd=tmp_path)
        with pytest.raises(FileNotFoundError):
            await asyncio.wait_for(missing.wait(), 60)
        started = await launching.launch(launcher, ["true"], cwd=tmp_path)  # and the next runs
        assert started.pid > 1
        assert await asyncio.wait_for(started.wait(), 60) == 0
        assert not launcher.gone
    finally:
        launcher.close(wait=10)


async def test_stopping_a_server_spares_the_jobs_later_commands_left(tmp_path: Path) -> None:
    """An orphan (its parent gone) belongs to the last call that had started when it did: a
    language server's stop does not reach the background job of a command started after it."""
    launcher = launching.LauncherProcess()
    job = f"300.{os.getpid()}"
    try:
        with (tmp_path / "server").open("wb") as f:
            server = await launching.launch(launcher, ["sleep", "200"], stdout=f, cwd=tmp_path)
        with (tmp_path / "command").open("wb") as f:
            command = await launching.launch(
                launcher, ["bash", "-c", f"setsid sleep {job} &"], stdout=f, cwd=tmp_path
            )
            assert await command.wait() == 0
        orphaned = await asyncio.to_thread(wait_until, lambda: _adopted(launcher.pid, job), 30)
        assert orphaned, "the job was never the launcher's orphan"
        server.kill()
        assert await server.wait() == -9
        assert _adopted(launcher.pid, job), "the server's stop took a later command's job"
    finally:
        launcher.close(wait=10)
    gone = await asyncio.to_thread(wait_until, lambda: not _adopted(launcher.pid, job), 30)
    assert gone, "the job outlived its launcher"


def _adopted(launcher: int, duration: str) -> bool:
    """Whether `sleep DURATION` runs as a child of the launcher (an orphan it adopted)."""
    for pid in all_pids():
        fields = stat_fields(pid)
        if cmdline(pid) == ["sleep", duration] and fields and fields[0] != "Z":
            return int(fields[1]) == launcher
    return False


async def test_where_there_is_no_launcher_commands_start_directly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Elsewhere than Linux (simulated): asyncio starts the command, in a group of its own,
    and the timeout still stops that group."""
    monkeypatch.setattr(sandbox, "USE_LAUNCHER", False)
    done = await run("echo direct; echo parent=$PPID; exit 3", tmp_path, sandbox="off")
    assert done.output.startswith("direct\n")
    assert done.output.endswith("[exit code: exit status 3]")
    assert f"parent={os.getpid()}" in done.output  # no launcher between
    stopped = await run("echo pgid=$$; sleep 60", tmp_path, BashTool(timeout=0.5), sandbox="off")
    assert stopped.output.endswith("[error: 0.5s timeout exceeded]")
    pgid = int(stopped.output.split("pgid=")[1].split()[0])
    gone = await asyncio.to_thread(
        wait_until, lambda: not [p for p in all_pids() if _group(p) == pgid], 10
    )
    assert gone, "the timeout left the group running"


def _group(pid: int) -> int | None:
    fields = stat_fields(pid)
    return int(fields[2]) if fields and fields[0] != "Z" else None


async def _echo(launcher: launching.LauncherProcess, word: str, tmp_path: Path) -> str:
    out = tmp_path / word
    with out.open("wb") as f:
        proc = launching.launch_sent(launcher, ["echo", word], stdout=f, cwd=tmp_path)
        assert await proc.wait() == 0
    return out.read_text()


def test_the_replies_are_read_by_each_loop_in_turn(tmp_path: Path) -> None:
    """The loop of the calls reads the launcher's replies: one `asyncio.run` after another (as
    tests do), each takes the socket over from the one that ended."""
    launcher = launching.LauncherProcess()
    try:
        for word in ("first", "second", "third"):
            assert asyncio.run(_echo(launcher, word, tmp_path)) == f"{word}\n"
        assert launcher.usable()
    finally:
        launcher.close(wait=10)


def test_a_launcher_that_died_between_two_loops_is_replaced(tmp_path: Path) -> None:
    """No loop read its socket when it died: the next call still gets a fresh launcher (its end
    is looked at before it is chosen), not an error."""
    first = asyncio.run(_echo(sandbox.plain_launcher(), "before", tmp_path))
    assert first == "before\n"
    dead = sandbox.plain_launcher()
    os.kill(dead.pid, 9)
    assert wait_until(lambda: state(dead.pid) in (None, "Z"), 10)
    assert not dead.usable()
    after = sandbox.plain_launcher()
    assert after is not dead
    assert asyncio.run(_echo(after, "after", tmp_path)) == "after\n"


def test_a_launcher_that_ends_while_no_loop_reads_it_is_reaped(tmp_path: Path) -> None:
    """Retired after its loop ended (a rebuilt ruleset's, between two tests' loops), it exits
    with no loop to read the end of its socket: it is reaped and dropped all the same, not left
    a zombie of mm's."""
    launcher = launching.LauncherProcess()
    assert asyncio.run(_echo(launcher, "once", tmp_path)) == "once\n"
    launcher.retire()  # no job left: it exits now
    assert wait_until(lambda: state(launcher.pid) is None, 10), state(launcher.pid)
    assert wait_until(lambda: launcher.gone, 10)


def test_two_loops_at_once_share_a_launcher(tmp_path: Path) -> None:
    """A loop in another thread calls while the first one, still running, reads the replies: a
    thread reads them from then on, and every call of both gets its end."""
    launcher = launching.LauncherProcess()
    ready = threading.Event()
    done: list[int] = []

    async def long_call() -> None:
        proc = launching.launch_sent(launcher, ["sleep", "1"], cwd=tmp_path)
        ready.set()
        done.append(await proc.wait())
        for _ in range(3):
            proc = launching.launch_sent(launcher, ["true"], cwd=tmp_path)
            done.append(await proc.wait())

    thread = threading.Thread(target=asyncio.run, args=(long_call(),))
    thread.start()
    try:
        assert ready.wait(30)
        for word in ("one", "two"):
            assert asyncio.run(_echo(launcher, word, tmp_path)) == f"{word}\n"
        thread.join(30)
        assert done == [0, 0, 0, 0]
        assert not launcher.gone
    finally:
        launcher.close(wait=10)
        thread.join(30)


async def test_each_call_gets_its_own_environment(tmp_path: Path) -> None:
    """The launcher keeps the last environment it was sent for the next call that brings the
    same; one that differs (a language server's) replaces it whole, and back again."""
    launcher = launching.LauncherProcess()
    plain = {"PATH": os.environ["PATH"], "MM_TEST_A": "1", "MM_TEST_B": "b"}
    other = {"PATH": os.environ["PATH"], "MM_TEST_A": "2"}
    try:
        seen = []
        for env in (plain, plain, other, plain, {"PATH": os.environ["PATH"], "BAD=": "x"}, other):
            out = tmp_path / "env"
            with out.open("wb") as f:
                proc = launching.launch_sent(
                    launcher,
                    ["sh", "-c", 'echo "${MM_TEST_A-unset} ${MM_TEST_B-unset}"'],
                    stdout=f,
                    cwd=tmp_path,
                    env=env,
                )
                try:
                    await proc.wait()
                except OSError as exc:  # a name with "=" cannot be set
                    seen.append(f"error {exc.errno}")
                    continue
            seen.append(out.read_text().strip())
        assert seen == ["1 b", "1 b", "2 unset", "1 b", "error 22", "2 unset"]
        assert Path(f"/proc/{launcher.pid}/environ").read_bytes() == b""
    finally:
        launcher.close(wait=10)
