"""The bash tool: one `bash -c` per call, its output collected through a temporary file.

Why a file and not a pipe: a command that leaves a job running (`nohup serve &`) hands that job
the write end of a pipe, and a reader waiting for end-of-file would wait for the job too, blocking
the turn for ever. With a file, the call returns as soon as the shell exits; the job keeps writing
into a deleted file nobody reads.

The flip side of a file: a runaway command (`yes`) would fill the disk within the timeout. Since
only the first and last MiB are ever read back, the middle of a huge output is punched out as a
hole while the command runs (`release_middle`).

Why its own process group: cancelling the turn or hitting the timeout must stop everything the
command started, not only the shell. The launcher process that started it (core/launcher.py)
does the stopping when asked: SIGTERM to the group and to every process of the command that left
it (`setsid`), SIGKILL after `KILL_GRACE`.

Its environment is mm's without the keys (`command_env`: mm's own key variables, the
`commandEnvExclude` patterns), with `QUIET_ENV` on top.

It runs in the sandbox (`core/sandbox.py`, the `sandbox` setting): started from the sandbox's
launcher process, it writes only in the project, the temp folder, ~/.cache and mm's state, reads all but
the deny list. When its output shows a refusal the sandbox may have made, one line says so
after the other markers (`Confinement.explain`); in strict mode without a sandbox the command
does not run and the text says why.

Markers appended to the output, each on a line of its own (a newline is added first when the
output does not already end with one):

- `[exit code: exit status N]` when the shell exits with N != 0;
- `[exit code: signal: killed]` (`terminated`, `segmentation fault`, … — the C library's name of
  the signal, lower-cased, as Go spells it) when the shell itself dies of a signal;
- `[error: 30s timeout exceeded]` (the number is the timeout) when the command ran too long;
- `[error: cancelled]` when the turn was cancelled; raised inside `ToolCancelled`;
- `LAUNCHER_GONE` when the launcher process died while the command ran (a command killed it).
- last, `[sandbox: refused by mm's sandbox — …]` when the output shows a refusal the sandbox may
  have made (a permission denied on a path it keeps from commands, or on no path at all).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import tempfile
from typing import TYPE_CHECKING, Any

from mm_tui.core.command_env import command_env
from mm_tui.tools import schemas
from mm_tui.tools.base import (
    CANCELLED,
    Tool,
    ToolCancelled,
    ToolContext,
    ToolResult,
    lazy_args,
    truncate,
)

if TYPE_CHECKING:
    from mm_tui.core.launcher import LaunchedProcess
    from mm_tui.tools.args import BashArgs


TIMEOUT = 30.0
KILL_GRACE = 0.1  # seconds between SIGTERM and SIGKILL: enough to flush, too short to notice
READ_BACK_LIMIT = 2 * 1024 * 1024  # above this the file is read back from both ends only
READ_BACK_END = 1024 * 1024  # bytes kept from each end
TOO_LARGE = "[... output too large to read back in full ...]"
SPILL_CHECK = 0.1  # seconds between looks at the size of a running command's output
SPILL_LIMIT = 64 * 1024 * 1024  # output beyond this has its unread middle given back to the disk

# Nothing the command runs may wait for a person: there is no terminal and no stdin.
QUIET_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "EDITOR": "true",
    "VISUAL": "true",
    "GIT_EDITOR": "true",
}


LAUNCHER_GONE = (
    "[error: the process that starts commands died while this one ran (a command may have "
    "killed it); its processes are no longer watched nor stopped. The next command starts a "
    "new one]"
)


def append_marker(output: str, marker: str) -> str:
    """Put a marker on a line of its own so it never merges with the command's last line."""
    if output and not output.endswith("\n"):
        output += "\n"
    return output + marker


def exit_marker(returncode: int) -> str:
    if returncode >= 0:
        return f"[exit code: exit status {returncode}]"
    try:
        name = signal.strsignal(-returncode)
    except ValueError:
        name = None
    return f"[exit code: signal: {name.lower() if name else -returncode}]"


def _utf8_head_end(data: bytes) -> int:
    """Where to cut `data` so that its end does not split a multibyte character."""
    n = len(data)
    for back in range(1, min(4, n) + 1):
        byte = data[n - back]
        if byte & 0xC0 == 0x80:  # a continuation byte: keep looking for the lead byte
            continue
        if byte < 0x80:
            return n
        need = 2 if byte >= 0xC0 and byte < 0xE0 else 3 if byte < 0xF0 else 4
        return n - back if back < need else n
    return n


def _utf8_tail_start(data: bytes) -> int:
    """Where to start `data` so that it does not begin in the middle of a multibyte character."""
    for i in range(min(3, len(data))):
        if data[i] & 0xC0 != 0x80:
            return i
    return min(3, len(data))


def _pread(fd: int, size: int, offset: int) -> bytes:
    chunks = []
    while size > 0:
        chunk = os.pread(fd, size, offset)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def read_back(fd: int) -> str:
    """The collected output, whole when it is small, from both ends when it is huge."""
    size = os.fstat(fd).st_size
    if size <= READ_BACK_LIMIT:
        return _pread(fd, size, 0).decode("utf-8", errors="replace")
    head = _pread(fd, READ_BACK_END, 0)
    tail = _pread(fd, READ_BACK_END, size - READ_BACK_END)
    head = head[: _utf8_head_end(head)]
    tail = tail[_utf8_tail_start(tail) :]
    return (
        append_marker(head.decode("utf-8", errors="replace"), TOO_LARGE)
        + "\n"
        + tail.decode("utf-8", errors="replace")
    )


_fallocate: Any = None  # libc's fallocate, looked up on first need; False when unavailable


def release_middle(fd: int) -> None:
    """Give back the disk space of the part of a huge output nobody will read.

    `yes` writes gigabytes a second and the timeout is 30 s: without this, a runaway command
    would fill the disk (or the memory, when /tmp is a tmpfs). Only the first and last MiB are
    ever read back, so the middle is punched out as a hole; the file keeps its size and both
    ends. Best effort: where the system cannot punch holes nothing happens.
    """
    global _fallocate
    size = os.fstat(fd).st_size
    if size <= SPILL_LIMIT:
        return
    if _fallocate is None:
        import ctypes.util  # here: a command this prolific is rare, and ctypes is slow to load

        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
            _fallocate = libc.fallocate
            _fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]
        except (OSError, AttributeError):
            _fallocate = False
    if not _fallocate:
        return
    start = READ_BACK_END
    end = (size - READ_BACK_END) // 4096 * 4096  # the tail that will be read stays whole
    punch_hole_keep_size = 0x02 | 0x01
    if _fallocate(fd, punch_hole_keep_size, start, end - start) != 0:
        _fallocate = False  # this file system cannot: do not try again


class OutputFile:
    """The command's output file, unlinked from the start (O_TMPFILE: nothing is left behind
    whatever happens); its descriptor, closed at the end of the `with`. As
    `tempfile.TemporaryFile` makes it, without the file object around it, which nothing here
    reads through (bench/bench_bash.py)."""

    def __enter__(self) -> int:
        try:
            self.fd = os.open(tempfile.gettempdir(), os.O_RDWR | os.O_TMPFILE, 0o600)
        except (AttributeError, OSError):  # not Linux, or a file system that cannot: a named
            # file, unlinked at once
            self.fd, path = tempfile.mkstemp()
            os.unlink(path)
        return self.fd

    def __exit__(self, *_: object) -> None:
        os.close(self.fd)


async def _wait(proc: LaunchedProcess, fd: int) -> None:
    """Wait for the shell, keeping an eye on how much disk its output takes (a timer rather
    than a task: most commands end before the first look, and then it costs nothing)."""
    loop = asyncio.get_running_loop()

    def look() -> None:
        nonlocal timer
        try:
            release_middle(fd)
        except OSError:
            return
        timer = loop.call_later(SPILL_CHECK, look)

    timer = loop.call_later(SPILL_CHECK, look)
    try:
        await proc.wait()
    finally:
        timer.cancel()


class BashTool(Tool):
    name = "bash"
    kind = "execute"
    counter = "commands"
    Args = lazy_args("BashArgs")
    parameters_schema = schemas.BASH

    def __init__(self, timeout: float = TIMEOUT) -> None:
        self.timeout = timeout

    def description(self) -> str:
        return (
            "Run a shell command with `bash -c` in the working directory and return its output "
            "(stdout and stderr merged). A new shell per call, no stdin, no terminal; a "
            f"{self.timeout:g}s timeout. A non-zero exit status is reported at the end of the "
            "output. Background jobs (`cmd &`) keep running after the call returns."
        )

    def title(self, args: BashArgs) -> str:
        return args.command

    def display(self, args: BashArgs) -> str:
        return f"🛠️  bash: {args.command}"

    def needs_permission(self, args: Any) -> bool:
        return True

    async def permission_details(self, args: BashArgs, ctx: ToolContext) -> str:
        return args.command

    def rejection(self) -> str:
        return "[command rejected by the user]"

    def timeout_marker(self) -> str:
        return f"[error: {self.timeout:g}s timeout exceeded]"

    async def run(self, args: BashArgs, ctx: ToolContext) -> ToolResult:
        limit = ctx.settings.max_output
        # mm's keys and the secrets the exclude list names stay out of what the model runs
        settings = ctx.settings
        env = command_env(settings.command_env_exclude, secrets=settings.secret_values())
        env.update(QUIET_ENV)
        # at the first command: not needed to start
        from mm_tui.core.launcher import LauncherGone
        from mm_tui.core.sandbox import confine

        sandbox = confine(settings.sandbox_config(), ctx.cwd, env)
        if sandbox.refused is not None:  # strict, and no sandbox here
            return ToolResult(sandbox.refused, status="error")
        with OutputFile() as fd:
            # From the launcher process (confined, or unconfined when the sandbox is off),
            # without waiting for the pid: a failure to start comes out of the wait.
            popen: dict[str, Any] = {
                "stdin": subprocess.DEVNULL,
                "stdout": fd,
                "stderr": subprocess.STDOUT,
                "cwd": ctx.cwd,
                "env": env,
            }
            argv = ["bash", "-c", args.command]
            try:
                proc = sandbox.start_sent(argv, **popen)
            except LauncherGone:
                return ToolResult(LAUNCHER_GONE, status="error")
            except OSError as exc:
                return ToolResult(f"[error: cannot run bash: {exc}]", status="error")
            if proc is None:  # started here (no launcher): a start cancelled midway is awaited
                starting = asyncio.ensure_future(sandbox.start(argv, **popen))
                try:
                    proc = await asyncio.shield(starting)
                except asyncio.CancelledError:
                    # Cancelled while it started: stop the command as any cancelled one, with
                    # what it wrote so far.
                    try:
                        proc = await starting
                    except OSError:
                        raise ToolCancelled(CANCELLED) from None
                    try:
                        await proc.stop(KILL_GRACE)
                    finally:
                        output = truncate(read_back(fd), limit)
                    raise ToolCancelled(append_marker(output, CANCELLED)) from None
                except OSError as exc:
                    return ToolResult(f"[error: cannot run bash: {exc}]", status="error")

            try:
                async with asyncio.timeout(self.timeout):
                    await _wait(proc, fd)
            except LauncherGone:
                output = truncate(read_back(fd), limit)
                return ToolResult(append_marker(output, LAUNCHER_GONE), status="error")
            except TimeoutError:
                await proc.stop(KILL_GRACE)
                output = truncate(read_back(fd), limit)
                return ToolResult(append_marker(output, self.timeout_marker()), status="error")
            except OSError as exc:  # the launcher could not start it
                return ToolResult(f"[error: cannot run bash: {exc}]", status="error")
            except asyncio.CancelledError:
                try:
                    await proc.stop(KILL_GRACE)
                finally:
                    output = truncate(read_back(fd), limit)
                raise ToolCancelled(append_marker(output, CANCELLED)) from None

            output = truncate(read_back(fd), limit)
        refused = sandbox.explain(output)  # the sandbox's line, when it refused something
        if proc.returncode:
            output = append_marker(output, exit_marker(proc.returncode))
        if refused is not None:
            output = append_marker(output, refused)
        return ToolResult(output, status="error" if proc.returncode else "ok")
