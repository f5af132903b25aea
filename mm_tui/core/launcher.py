"""mm's side of the launcher processes (`core/launcher_process.py`): every command the model
runs (bash, a language server) starts from one, never from a thread of mm.

Why a process: a thread of mm that confined itself shared mm's memory with the commands it
started, in the same Landlock domain: a command could signal that thread, ptrace it, read mm's
memory (the api key) through it, and patch the code mm's other threads run. The launcher is a
process of its own, confined before it starts anything, holding no secret (an empty
environment, no descriptor but its socket), so a command that takes it over gains nothing the
command did not have. mm itself is in no domain: Landlock keeps the commands from signalling
it, ptracing it or reading its /proc files.

One launcher per ruleset (and one unconfined, for `sandbox: off` or a kernel without Landlock),
started at first need. A call is one message out (`S`: argv, cwd, environment, and the child's
stdin, stdout and stderr as descriptors mm made and keeps its ends of) and two back (its pid,
then its returncode once the launcher reaped it); the bash tool asks for no pid (`launch_sent`),
which spares a reply and a wake-up of mm per call. mm's event loop reads the replies itself
(`LauncherProcess._watch`): a thread reading them had to wake the loop in turn. A thread per
launcher only waits for its process to end (`_await_exit`), to reap it and drop it whether or
not a loop reads its socket then. Stopping a call is a request (`K`): the
launcher signals the call's group and every descendant that left it (`setsid`), SIGKILL after
the grace; mm never signals a pid the launcher reported.

What the launcher says is untrusted (a command shares its domain and may have taken it over):
replies are 9 bytes, parsed strictly, about calls mm is waiting on; anything else, or its end
closing, and mm drops that launcher: its running calls fail with `LauncherGone`, and the next
call starts a fresh launcher. The dead launcher's jobs are orphaned then (reparented outside
mm's reach, as the launcher reaped them); a launcher that a command killed took no step to
stop them.

When mm goes (it exits, crashes or is killed), the launcher's end of the socket closes and the
launcher kills every descendant it has, `setsid` ones included, and exits. A ruleset that is
rebuilt retires its launcher (`Q`): it takes no new call, keeps its running jobs until mm exits
or it has none left.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import errno
import json
import os
import select
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, cast

from mm_tui.core.command_env import command_env, excluded
from mm_tui.core.processes import kill_group, stop_group

REPLY = struct.Struct("=cIi")
STOP = struct.Struct("=II")
MAX_MESSAGE = 60 * 1024  # a request larger than this goes in a memfd
READY_TIMEOUT = 30.0  # seconds for a launcher to start and confine itself (a busy machine)
_PR_SET_DUMPABLE = 4
SCRIPT = str(Path(__file__).with_name("launcher_process.py"))
_RETURNCODE_RANGE = range(-128, 256)
_STAGES = {
    1: "prctl(PR_SET_NO_NEW_PRIVS)",
    2: "landlock_restrict_self",
    3: "seccomp",
    4: "setup",
    5: "namespaces",
}
STAGE_NAMESPACES = 5


class LauncherGone(OSError):
    """The launcher process ended (or said something it could not have said) while mm waited on
    it: a command may have killed it."""

    def __init__(self) -> None:
        super().__init__(errno.EPIPE, "the launcher process of the commands is gone")


class LauncherFailed(OSError):
    """The launcher could not confine itself: (stage, errno) as it reported."""

    def __init__(self, err: int, text: str, stage: int = 0) -> None:
        super().__init__(err, text)
        self.stage = stage


class _Pending:
    """What mm waits on for one call: its pid, its end, a stop; futures of the caller's loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.started: asyncio.Future[int] = loop.create_future()
        self.exited: asyncio.Future[int] = loop.create_future()
        self.waiting: list[asyncio.Future[None]] = []  # `LaunchedProcess.wait`s, woken with it
        self.stopped: asyncio.Future[None] | None = None
        # False: a failure to start goes to `exited`, and the launcher does not send the pid
        self.await_start = True
        self.argv0 = ""
        self.pid = 0
        self.returncode: int | None = None


def _settle(
    future: asyncio.Future[Any] | None, value: Any = None, exc: BaseException | None = None
) -> None:
    if future is None or future.done():
        return
    if exc is not None:
        future.set_exception(exc)
        future.exception()  # retrieved: nobody may be waiting any more
    else:
        future.set_result(value)


def _settle_end(pending: _Pending, value: Any = None, exc: BaseException | None = None) -> None:
    """Settle the call's `exited` and wake the `LaunchedProcess.wait`s in the same turn of the
    loop (awaited through asyncio.shield, whose done callback comes a turn later, the end of
    every call took one turn more)."""
    _settle(pending.exited, value, exc)
    for waiter in pending.waiting:
        _settle(waiter)


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Any, *args: Any) -> None:
    with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits there
        loop.call_soon_threadsafe(fn, *args)


def _settle_now(loop: asyncio.AbstractEventLoop, fn: Any, *args: Any) -> None:
    """`_call_soon` from that loop's own thread: no wake-up to ask for."""
    fn(*args)


def _running_here(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


_guarded = False


def guard_mm() -> None:
    """Before mm's first launcher: keep mm's secrets out of what a confined command may read of
    it through /proc. Landlock refuses a confined command ptrace and mm's memory, but not what
    only asks to read: mm's environment (`MM_API_KEY`), its memory maps, its descriptors' list.

    - mm is made not dumpable (`PR_SET_DUMPABLE` 0, as ssh-agent does): its /proc files then
      belong to root, so a command of a plain user cannot open them. The price: no core dump of
      mm, and a debugger attaches to it only with CAP_SYS_PTRACE.
    - a command of root can still open them (the kernel's check for reading lets root through,
      CAP_SYS_PTRACE or not: seen on Linux 6.18), so the values of the secret variables
      (`command_env.excluded`: mm's key variables and the default exclude list's names) are
      overwritten where /proc/<mm>/environ reads them, the block the kernel gave mm at exec.
      mm keeps them: Python copied them at start-up (`os.environ`), and `os.putenv` gives the
      C library's environment a copy of its own, which children started without `env=` inherit.
    """
    global _guarded
    if _guarded or not sys.platform.startswith("linux"):
        return
    _guarded = True
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    zero = ctypes.c_ulong(0)
    libc.prctl(ctypes.c_int(_PR_SET_DUMPABLE), zero, zero, zero, zero)
    with contextlib.suppress(OSError, ValueError, IndexError):
        _scrub_environment_block()


def _scrub_environment_block() -> None:
    import ctypes

    with open("/proc/self/stat", "rb") as f:
        data = f.read()
    fields = data[data.rfind(b")") + 2 :].split()
    start, end = int(fields[47]), int(fields[48])  # env_start, env_end (fields 50 and 51)
    if not 0 < start < end or end - start > 64 * 1024 * 1024:
        return
    block = ctypes.string_at(start, end - start)
    offset = 0
    for entry in block.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        text = os.fsdecode(name)
        if sep and value and excluded(text):
            real = os.environ.get(text)
            ctypes.memset(start + offset + len(name) + 1, ord("*"), len(value))
            if real is not None:
                os.putenv(text, real)  # the C library's environment: a copy of its own
        offset += len(entry) + 1


class LauncherProcess:
    """One launcher process and its socket, whose replies the event loop of the calls reads
    (`_watch`; a thread of mm, never confined, where two loops at once use it)."""

    def __init__(
        self,
        ruleset_fd: int | None = None,
        seccomp: bytes | None = None,
        hide: list[str] | None = None,
        proc_rights: int = 0,
    ) -> None:
        """`hide`: when given, the launcher enters PID and mount namespaces of its own and covers
        these paths (see `launcher_process._enter_namespaces`), and gives its own /proc
        `proc_rights` in the ruleset; `LauncherFailed` with `stage == STAGE_NAMESPACES` when it
        cannot."""
        guard_mm()
        self.hide = hide
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock = mine
        self._lock = threading.Lock()
        self._reading = threading.Lock()  # held by whoever reads a reply and hands it on
        self._watcher: asyncio.AbstractEventLoop | None = None  # the loop that reads replies
        self._threaded = False  # a thread reads them instead (two loops at once used this)
        self._pending: dict[int, _Pending] = {}
        self._next = 1
        self._env: tuple[dict[str, str], bytes] | None = None
        self.gone = False
        self.retired = False
        self._awaited = False  # a thread waits for the process to end (`_await_exit`)
        pass_fds = [theirs.fileno()]
        if ruleset_fd is not None:
            pass_fds.append(ruleset_fd)
        try:
            self._popen = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-S",
                    SCRIPT,
                    str(theirs.fileno()),
                    str(-1 if ruleset_fd is None else ruleset_fd),
                    str(os.getpid()),
                    *(["namespaces"] if hide is not None else []),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={},  # no secret: each command gets its own environment
                pass_fds=pass_fds,
                close_fds=True,
                cwd="/",
            )
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
        self.pid = self._popen.pid
        try:
            if hide is not None:
                asked = {"hide": hide, "proc": proc_rights}
                mine.sendall(b"N" + json.dumps(asked).encode())
            mine.sendall(b"I" + (seccomp or b""))
            mine.settimeout(READY_TIMEOUT)
            kind, stage, err = self._parse(mine.recv(64))
            mine.settimeout(None)
        except (OSError, ValueError) as exc:
            self._drop()
            raise LauncherGone() from exc
        if kind == b"F":
            self._drop()
            name = _STAGES.get(stage, "setup")
            raise LauncherFailed(err, f"{name} failed: {os.strerror(err)}", stage)
        if kind != b"R":
            self._drop()
            raise LauncherGone()
        _living.add(self)
        self._awaited = True
        threading.Thread(
            target=self._await_exit, name=f"mm-launcher-{self.pid}", daemon=True
        ).start()

    def outside(self, pid: int) -> int:
        """The pid, as mm sees it, of the child this launcher numbered `pid`: the same but in a
        PID namespace of the launcher's own, where it is the pid in the last field of the
        `NSpid` line of a child of the launcher's first process; that pid when it is gone."""
        if self.hide is None or pid <= 0:
            return pid
        for keeper_child in _children(self.pid):
            for child in _children(keeper_child):
                if _namespace_pid(child) == pid:
                    return child
        return pid

    @staticmethod
    def _parse(data: bytes) -> tuple[bytes, int, int]:
        if len(data) != REPLY.size:
            raise ValueError("malformed reply")
        return REPLY.unpack(data)

    # --- what mm asks ------------------------------------------------------------------------

    async def started(self, ident: int, pending: _Pending) -> None:
        """Wait until the launcher reported the pid of the call `send` (with `await_start`)
        asked for. Raises OSError as Popen would (the launcher's errno), `LauncherGone` when
        it died; cancelled, the call is stopped once its pid is known."""
        try:
            await asyncio.shield(pending.started)
        except asyncio.CancelledError:
            # started or about to be: stop it once its pid is known, whatever happens here
            pending.started.add_done_callback(lambda f: self._kill_late(ident, f))
            raise

    def send(
        self,
        argv: list[str],
        cwd: str,
        env: Mapping[str, str],
        stdio: tuple[int, int, int],
        await_start: bool = False,
    ) -> tuple[int, _Pending]:
        """Ask for `argv` to be started, without waiting: (call id, what to wait on). Not a
        coroutine, so nothing can come between the request and its record (a cancellation
        there would leave a command running that nobody waits on), and a call that does not
        need the pid saves a wake-up of mm. `await_start` False: a failure to start comes out
        of the wait for the end. Raises `LauncherGone` when the launcher died."""
        loop = asyncio.get_running_loop()
        if self._watcher is not loop and not self._threaded:
            self._watch(loop)
        pending = _Pending(loop)
        pending.await_start = await_start
        pending.argv0 = argv[0] if argv else ""
        # the pid is only shown: a call that does not wait for it is not told (a reply, and a
        # wake-up of mm, less per call)
        request = {"id": 0, "argv": argv, "cwd": cwd, "pid": await_start}
        payload = json.dumps(request, ensure_ascii=True).encode() + self._encoded(env)
        with self._lock:
            if self.gone:
                raise LauncherGone()
            ident = self._next
            self._next += 1
            self._pending[ident] = pending
        payload = payload.replace(b'{"id": 0,', b'{"id": %d,' % ident, 1)
        memfd = -1
        try:
            if len(payload) + 1 <= MAX_MESSAGE:
                message, fds = b"S" + payload, list(stdio)
            else:
                memfd = os.memfd_create("mm-launch", os.MFD_CLOEXEC)
                os.pwrite(memfd, payload, 0)
                message, fds = b"L", [*stdio, memfd]
            socket.send_fds(self._sock, [message], fds)
        except OSError:
            self._forget(ident)
            self._drop()
            raise LauncherGone() from None
        finally:
            if memfd >= 0:
                os.close(memfd)
        return ident, pending

    def _encoded(self, env: Mapping[str, str]) -> bytes:
        """`\\0` and the environment in JSON: the end of a request, kept while the environment
        is the same from call to call (as a bash call's is), which spares encoding forty
        variables each time; the launcher, finding the same bytes, spares their decoding and
        its start of the command their copying (`launcher_process.Launcher.environment`)."""
        last = self._env
        if last is not None and last[0] == env:
            return last[1]
        copy = dict(env)
        encoded = b"\0" + json.dumps(copy, ensure_ascii=True).encode()
        self._env = (copy, encoded)
        return encoded

    def _kill_late(self, ident: int, started: asyncio.Future[int]) -> None:
        if not started.cancelled() and started.exception() is None:
            self.request_stop(ident, 0)

    def request_stop(self, ident: int, grace: float) -> None:
        """Ask the launcher to stop call `ident` (grace 0: SIGKILL at once). No wait."""
        with contextlib.suppress(OSError):
            self._sock.send(b"K" + STOP.pack(ident, max(0, min(int(grace * 1000), 60_000))))

    async def stop(self, ident: int, grace: float) -> None:
        """Stop call `ident` and wait until the launcher says it is done (or is gone)."""
        pending = self._pending.get(ident)
        if pending is None:
            self.request_stop(ident, grace)
            return
        if pending.stopped is None or pending.stopped.done():
            pending.stopped = pending.loop.create_future()
        stopped = pending.stopped
        self.request_stop(ident, grace)
        with contextlib.suppress(LauncherGone):
            await asyncio.shield(stopped)

    def forget(self, ident: int) -> None:
        """mm waits on nothing more of this call."""
        self._forget(ident)

    def _forget(self, ident: int) -> None:
        with self._lock:
            self._pending.pop(ident, None)

    def retire(self) -> None:
        """No new call; the launcher exits once it has no child left."""
        self.retired = True
        with contextlib.suppress(OSError):
            self._sock.send(b"Q")

    def close(self, wait: float = 0.0) -> None:
        """Close mm's end: the launcher kills all it started and exits; wait for that briefly."""
        self._drop()
        if wait > 0:
            self.reap(wait)

    def reap(self, wait: float) -> None:
        """Wait up to `wait` seconds for the launcher process to end."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(wait)

    # --- what it says -----------------------------------------------------------------------

    def usable(self) -> bool:
        """Whether calls can go to this launcher: not dropped, and its end not closed while no
        loop read its socket (between two event loops: a test's, say), which is looked at now."""
        if self.gone:
            return False
        watcher = self._watcher
        if not self._threaded and (watcher is None or not watcher.is_running()):
            self._drain()
        return not self.gone

    def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Have `loop` (the running one) read the replies from now on.

        Why the loop and not a thread: a thread that reads a reply must then wake the loop
        (`call_soon_threadsafe`), a second wake-up per call on the way from the command's end
        to the caller; the loop reading the socket itself settles the call's future at once.
        A loop that ended (a test's, one `asyncio.run` after another) hands the socket on to
        the next; two running at once (a loop in another thread) hand it to a thread for good."""
        with self._lock:
            old = self._watcher
            if old is loop or self._threaded or self.gone:
                return
            if old is not None and not old.is_closed() and old.is_running():
                # another thread's loop reads it: a thread does from now on (until that loop
                # let go, both may: one reply at a time, in order, under `_reading`)
                self._threaded = True
                self._start_thread()
                _call_soon(old, self._to_thread, old)
                return
            self._watcher = None
        if old is not None:
            self._unwatch(old)
        self._drain()  # what came while no loop read it (its end, say)
        with self._lock:
            if self.gone or self._threaded or self._watcher is not None:
                return
            try:
                loop.add_reader(self._sock, self._readable, loop)
            except NotImplementedError:  # a loop that cannot watch a descriptor
                self._threaded = True
                self._start_thread()
                return
            self._watcher = loop

    def _unwatch(self, loop: asyncio.AbstractEventLoop) -> None:
        """`loop` (ended, or this thread's) reads the socket no more."""
        if not loop.is_closed():
            with contextlib.suppress(ValueError, OSError, RuntimeError):
                loop.remove_reader(self._sock)

    def _to_thread(self, old: asyncio.AbstractEventLoop) -> None:
        """On the loop that read the replies so far: the thread reads them from now on."""
        with self._lock:
            if self._watcher is not old or self.gone:
                return
            self._watcher = None
        self._unwatch(old)

    def _await_exit(self) -> None:
        """A thread per launcher, blocked until its process ends (it wakes at no call): reaps
        it, reads what it said last and the end of its socket, and drops it. A launcher that
        ended while no loop read its socket (a retired one whose last job ended after the loop
        that ran its calls, one killed between two loops) is reaped and dropped all the same."""
        with contextlib.suppress(OSError):
            self._popen.wait()
        self._drain()
        self._drop()

    def _start_thread(self) -> None:
        threading.Thread(target=self._read, name=f"mm-launcher-{self.pid}", daemon=True).start()

    def _readable(self, loop: asyncio.AbstractEventLoop) -> None:
        """The watching loop's callback: one reply (or the end of the socket) is there."""
        if self.gone:
            self._unwatch(loop)
            self._sock.close()  # dropped from another thread, which left the closing here
            return
        with self._reading:
            try:
                data = self._sock.recv(64, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if data and self._handle(data, loop):
                return
        self._drop()

    def _drain(self) -> None:
        """Read what is there, without waiting."""
        with self._reading:
            while not self.gone:
                try:
                    # no ancillary buffer: descriptors it might send are dropped
                    data = self._sock.recv(64, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    return
                except OSError:
                    data = b""
                if not data or not self._handle(data, None):
                    break
        self._drop()

    def _read(self) -> None:
        """The thread's reading: a wait for the socket, then what is there, under `_reading`
        (a loop may still read it too, until it let go)."""
        poller = select.poll()
        try:
            poller.register(self._sock, select.POLLIN)
        except ValueError:  # closed: dropped already
            return
        while not self.gone:
            with contextlib.suppress(InterruptedError):
                poller.poll()
            self._drain()

    def _handle(self, data: bytes, here: asyncio.AbstractEventLoop | None) -> bool:
        try:
            kind, ident, value = self._parse(data)
        except ValueError:
            return False
        return self._route(kind, ident, value, here)

    def _route(
        self, kind: bytes, ident: int, value: int, here: asyncio.AbstractEventLoop | None = None
    ) -> bool:
        """Hand one reply to the call it names; False when it makes no sense (drop the launcher).
        `here`: the loop this runs on, whose futures are settled at once."""
        with self._lock:
            pending = self._pending.get(ident)
        if pending is None:
            return kind in (b"X", b"T")  # about a call mm no longer waits on
        loop = pending.loop
        settle = _settle_now if loop is here else _call_soon
        if kind == b"P":
            if value <= 1 or pending.started.done() or pending.pid:
                return False
            pending.pid = value
            if pending.await_start:
                settle(loop, _settle, pending.started, value)
        elif kind == b"E":
            if pending.pid or pending.returncode is not None or value <= 0 or value > 4095:
                return False
            self._forget(ident)
            failed = OSError(value, os.strerror(value), pending.argv0)
            if pending.await_start:
                settle(loop, _settle, pending.started, None, failed)
            else:
                settle(loop, _settle_end, pending, None, failed)
        elif kind == b"X":
            if (
                (pending.await_start and not pending.pid)
                or value not in _RETURNCODE_RANGE
                or pending.returncode is not None
            ):
                return False
            pending.returncode = value
            settle(loop, _settle_end, pending, value)
        elif kind == b"T":
            settle(loop, _settle, pending.stopped, None)
        else:
            return False
        return True

    def _drop(self) -> None:
        """This launcher is done with: its socket closed, every waiting call told."""
        with self._lock:
            if self.gone:
                return
            self.gone = True
            pending, self._pending = list(self._pending.values()), {}
            watcher, self._watcher = self._watcher, None
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        if watcher is not None and watcher.is_running() and not _running_here(watcher):
            # that loop reads the socket in its thread: it closes it, woken by the shutdown
            # (closed here, the number could be another's before that loop unwatched it)
            self._watcher = watcher
        else:
            if watcher is not None:
                self._unwatch(watcher)
            self._sock.close()
        _living.discard(self)
        for p in pending:
            _call_soon(p.loop, _settle, p.started, None, LauncherGone())
            _call_soon(p.loop, _settle_end, p, None, LauncherGone())
            _call_soon(p.loop, _settle, p.stopped, None, LauncherGone())
        if not self._awaited:  # reap it (its exit is near: its socket is closed)
            threading.Thread(target=self._popen.wait, daemon=True).start()


class LaunchedProcess:
    """A child started by a launcher, used as an asyncio process is: `pid` (for showing only),
    `returncode`, `await wait()`, after `open_streams` its pipes as `stdin`, `stdout`, `stderr`;
    `await stop(grace)` and `kill()` go through the launcher."""

    def __init__(
        self,
        launcher: LauncherProcess,
        ident: int,
        pending: _Pending,
        pipes: tuple[int | None, int | None, int | None],
    ) -> None:
        self._launcher = launcher
        self._ident = ident
        self._pending = pending
        self._pipes: list[int | None] = list(pipes)
        self.stdin: asyncio.StreamWriter | None = None
        self.stdout: asyncio.StreamReader | None = None
        self.stderr: asyncio.StreamReader | None = None
        self._transports: list[asyncio.BaseTransport] = []
        self.lost = False  # the launcher died before the child's end was known

    @property
    def pid(self) -> int:
        """The child's pid (0 until the launcher said it, and always for `launch_sent`, whose
        launcher does not say it): to show, never to signal. A launcher
        in a PID namespace of its own numbers its children there: mm's number is found from it
        while the child runs (`LauncherProcess.outside`)."""
        return self._launcher.outside(self._pending.pid)

    @property
    def returncode(self) -> int | None:
        return self._pending.returncode

    async def wait(self) -> int:
        """The child's returncode once the launcher reaped it; raises `LauncherGone` when the
        launcher died first."""
        pending = self._pending
        if not pending.exited.done():
            # its own future, so that a cancelled wait leaves `exited` for the next one
            waiter: asyncio.Future[None] = pending.loop.create_future()
            pending.waiting.append(waiter)
            try:
                await waiter
            finally:
                pending.waiting.remove(waiter)
        try:
            code = pending.exited.result()
        except LauncherGone:
            self.lost = True
            raise
        if self._pending.stopped is None:
            self._launcher.forget(self._ident)
        return code

    async def stop(self, grace: float) -> None:
        """SIGTERM to the child's group and to what left it, SIGKILL after `grace`; returns when
        the launcher has done it. Cancelled while it waits, the SIGKILL still comes."""
        try:
            await self._launcher.stop(self._ident, grace)
        except asyncio.CancelledError:
            self._launcher.request_stop(self._ident, 0)
            raise
        with contextlib.suppress(LauncherGone, asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._pending.exited), 5.0)
        self._launcher.forget(self._ident)

    def kill(self) -> None:
        """SIGKILL at once to the group and to what left it, even after the child exited (what
        it left behind goes too). Waits for nothing: serves when the event loop is gone."""
        self._launcher.request_stop(self._ident, 0)

    async def open_streams(self, limit: int = 2**16) -> None:
        """Hand mm's ends of the pipes to the event loop: `stdin` a StreamWriter, `stdout` and
        `stderr` StreamReaders, None for what is no pipe."""
        loop = asyncio.get_running_loop()
        fd = self._pipes[0]
        if fd is not None:
            transport, protocol = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin, open(fd, "wb", buffering=0)
            )
            self._pipes[0] = None
            self._transports.append(transport)
            self.stdin = asyncio.StreamWriter(transport, protocol, None, loop)
        for index, name in ((1, "stdout"), (2, "stderr")):
            fd = self._pipes[index]
            if fd is None:
                continue
            reader = asyncio.StreamReader(limit=limit, loop=loop)
            read, _ = await loop.connect_read_pipe(
                lambda reader=reader: asyncio.StreamReaderProtocol(reader, loop=loop),
                open(fd, "rb", buffering=0),
            )
            self._pipes[index] = None
            self._transports.append(read)
            setattr(self, name, reader)

    def close_streams(self) -> None:
        """Close the pipes' transports (the child is gone, or going)."""
        for transport in self._transports:
            transport.close()
        self._close_pipes()

    def _close_pipes(self) -> None:
        for index, fd in enumerate(self._pipes):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
                self._pipes[index] = None

    def abandon(self) -> None:
        """Let go of a child whose event loop is gone (kill it first): its pipes are closed
        without that loop; the launcher reaps it."""
        for transport in self._transports:
            with contextlib.suppress(Exception):  # its loop is closed: this cannot finish
                if isinstance(transport, asyncio.WriteTransport):
                    transport.abort()
                else:
                    transport.close()
        self._close_pipes()
        self._launcher.forget(self._ident)


class DirectProcess(LaunchedProcess):
    """Elsewhere than Linux, where nothing is confined and the launcher's means are missing
    (pipe2, memfd, SOCK_SEQPACKET, prctl): a child asyncio starts in a session of its own, in
    the shape of a `LaunchedProcess`, stopped with `core/processes.py`. Commands there do not
    die with a killed mm."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:  # noqa: D107
        self._proc = proc
        self.stdin = proc.stdin
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.lost = False

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    async def wait(self) -> int:
        return await self._proc.wait()

    async def stop(self, grace: float) -> None:
        await stop_group(self._proc, grace)

    def kill(self) -> None:
        kill_group(self._proc)

    async def open_streams(self, limit: int = 2**16) -> None:
        """asyncio made them already."""

    def close_streams(self) -> None:
        if self.stdin is not None:
            self.stdin.close()

    def abandon(self) -> None:
        kill_group(self._proc)


USE_LAUNCHER = sys.platform.startswith("linux")


async def launch_direct(argv: list[str], **popen: Any) -> DirectProcess:
    """`launch` where there is no launcher process (see `DirectProcess`)."""
    streams = [
        subprocess.DEVNULL if popen.get(name) is None else popen[name]
        for name in ("stdin", "stdout", "stderr")
    ]
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=streams[0],
        stdout=streams[1],
        stderr=streams[2],
        cwd=popen.get("cwd"),
        env=command_env() if popen.get("env") is None else popen["env"],
        start_new_session=True,
    )
    return DirectProcess(proc)


_living: set[LauncherProcess] = set()


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except (OSError, ValueError):
        return []


def _namespace_pid(pid: int) -> int:
    """The last field of `NSpid` in /proc/PID/status: the pid in the innermost namespace."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


_null = -1


def _devnull() -> int:
    """/dev/null, opened once for every call's stdin (an open and a close less per call)."""
    global _null
    if _null < 0:
        _null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    return _null


def launch_args(
    popen: Mapping[str, Any],
) -> tuple[tuple[int, int, int], tuple[int | None, ...], list[int]]:
    """The child's three descriptors from Popen-like `stdin`/`stdout`/`stderr` (DEVNULL, PIPE,
    STDOUT, a descriptor, None: /dev/null, never mm's own terminal); mm's ends of the pipes; and
    the descriptors to close once they were sent."""
    close: list[int] = []
    child: list[int] = []
    mine: list[int | None] = []
    try:
        for index, name in enumerate(("stdin", "stdout", "stderr")):
            spec = popen.get(name)
            if spec == subprocess.STDOUT and index == 2:
                child.append(child[1])
                mine.append(None)
            elif spec == subprocess.PIPE:
                read, write = os.pipe2(os.O_CLOEXEC)
                ours, theirs = (write, read) if index == 0 else (read, write)
                child.append(theirs)
                close.append(theirs)
                mine.append(ours)
            elif isinstance(spec, int) and spec >= 0:
                child.append(spec)
                mine.append(None)
            elif hasattr(spec, "fileno"):
                child.append(cast("IO[bytes]", spec).fileno())
                mine.append(None)
            else:  # DEVNULL, None
                child.append(_devnull())
                mine.append(None)
    except BaseException:
        for fd in close + [m for m in mine if m is not None]:
            os.close(fd)
        raise
    return (child[0], child[1], child[2]), tuple(mine), close


async def launch(launcher: LauncherProcess, argv: list[str], **popen: Any) -> LaunchedProcess:
    """Start `argv` from `launcher` with Popen-like arguments (`stdin`, `stdout`, `stderr`,
    `cwd`, `env`; the child always leads a group of its own, in the launcher's session, which
    has no terminal); returns once the launcher reported its pid."""
    proc = _sent(launcher, argv, popen, await_start=True)
    try:
        await launcher.started(proc._ident, proc._pending)
    except BaseException:
        proc._close_pipes()
        raise
    return proc


def launch_sent(launcher: LauncherProcess, argv: list[str], **popen: Any) -> LaunchedProcess:
    """`launch` without waiting for the pid (`LauncherProcess.send`): a failure to start comes
    out of `wait()`."""
    return _sent(launcher, argv, popen, await_start=False)


def _sent(
    launcher: LauncherProcess, argv: list[str], popen: Mapping[str, Any], await_start: bool
) -> LaunchedProcess:
    stdio, mine, close = launch_args(popen)
    try:
        ident, pending = launcher.send(*_request(argv, popen), stdio, await_start)
    except BaseException:
        _close([m for m in mine if m is not None])
        raise
    finally:
        _close(close)
    return LaunchedProcess(launcher, ident, pending, (mine[0], mine[1], mine[2]))


def _request(argv: list[str], popen: Mapping[str, Any]) -> tuple[list[str], str, Mapping[str, str]]:
    env = popen.get("env")
    cwd = popen.get("cwd")
    return (
        [os.fsdecode(a) for a in argv],
        os.fsdecode(cwd) if cwd is not None else os.getcwd(),
        command_env() if env is None else env,
    )


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def stop_all(wait: float = 1.0) -> None:
    """At mm's exit: close every launcher (each kills what it started), wait for them briefly."""
    launchers = list(_living)
    for launcher in launchers:
        launcher.close()
    deadline = time.monotonic() + wait
    for launcher in launchers:
        launcher.reap(max(0.0, deadline - time.monotonic()))


def seccomp_filter(network: bool) -> bytes | None:
    """The seccomp program a confined launcher installs (raw `struct sock_filter` array), None
    for none: with `sandboxNetwork: false`, `seccomp.network_filter()`, which takes away what
    Landlock's TCP rights do not cover (MPTCP, SCTP, raw and packet sockets, io_uring, Fast
    Open sends). None where it cannot be built (an architecture it does not know): Landlock
    still refuses TCP there, and the README says what stays open."""
    if network:
        return None
    from mm_tui.core import seccomp

    try:
        return seccomp.network_filter()
    except seccomp.FilterUnavailable:
        return None


atexit.register(stop_all)
