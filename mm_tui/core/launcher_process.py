"""The launcher process: the one place the commands the model runs are started from.

Run by mm (`core/launcher.py`) as `python -I -S <this file> SOCKET RULESET MM_PID`: isolated,
without site, so it starts in a few milliseconds and imports nothing of mm's or of the
environment's. Standard library only; it never imports mm (it may run as a plain script).

Before it starts anything it:

- drops mm's controlling terminal (`_leave_terminal`) and leads a process group of its own;
  its stdin, stdout and stderr are /dev/null and it holds no descriptor but the socket to mm (and the ruleset's, closed once
  applied);
- asks for SIGTERM when mm goes (`PR_SET_PDEATHSIG`; a signal that comes while mm is still its
  parent, when the thread that started it ended or a command sent it, is ignored) and becomes
  the reaper of every orphan below it (`PR_SET_CHILD_SUBREAPER`): a `setsid` grandchild stays its
  descendant whatever happens to the processes between;
- takes no new privileges, confines itself with the Landlock ruleset mm built (when given one)
  and installs the seccomp filter mm sent (when given one), in that order.

Its environment is empty (mm gives each command its own): it holds no secret. Each command
leads a process group of its own, without a terminal (none can become theirs: only a session's
leader acquires one).

The wire, a SOCK_SEQPACKET socketpair (one message, one request):

- mm -> launcher: `I` + seccomp filter (raw `struct sock_filter` array, may be empty) first;
  `S` + JSON {"id", "argv", "cwd", "env"} with the child's stdin, stdout and stderr passed as
  three descriptors (SCM_RIGHTS), or `L` with a fourth one, a memfd holding that JSON, when it is
  too large for one message; `K` + id + grace in ms: stop that call (SIGTERM to its group and to
  every descendant that left it, SIGKILL to all of them after the grace, repeated until none is
  left); `Q`: take no more work, exit when no child is left.
- launcher -> mm: 9 bytes, kind + u32 + i32: `R` ready; `F` (stage, errno) confinement failed;
  `P` (id, pid) started; `E` (id, errno) could not start; `X` (id, returncode as Popen gives
  it) the call's process ended and was reaped; `T` (id, 0) a stop is done.

When mm's end closes (mm exited, crashed, was killed), it kills every descendant it has, reaps
them, and exits.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from typing import Any

REPLY = struct.Struct("=cIi")
STOP = struct.Struct("=II")
MAX_REQUEST = 64 * 1024  # bytes of one message mm sends (larger ones come in a memfd)
MAX_LARGE = 64 * 1024 * 1024  # bytes of a request read from a memfd
KEEP_ENDED = 256  # ended calls remembered (a stop may come after the end: a server's helpers)

_PR_SET_PDEATHSIG = 1
_PR_CAPBSET_DROP = 24
_CAP_SYS_PTRACE = 19
_CAPABILITY_VERSION_3 = 0x20080522
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38
_SYS_RESTRICT_SELF = 446

STAGE_NO_NEW_PRIVS = 1
STAGE_LANDLOCK = 2
STAGE_SECCOMP = 3
STAGE_SETUP = 4


class Call:
    """One started command: its process (which leads its own group) and when it started."""

    def __init__(self, ident: int, popen: subprocess.Popen[bytes]) -> None:
        self.ident = ident
        self.popen = popen
        self.pid = popen.pid
        self.start = _starttime(popen.pid)
        self.running = True


def _starttime(pid: int) -> int:
    fields = _stat(pid)
    return fields[3] if fields else 0


def _stat(pid: int) -> tuple[int, int, str, int] | None:
    """(ppid, pgid, state, starttime) of `pid` from /proc, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    rest = data[data.rfind(b")") + 2 :].split()
    try:
        return int(rest[1]), int(rest[2]), rest[0].decode(), int(rest[19])
    except (IndexError, ValueError):
        return None


def _table() -> dict[int, tuple[int, int, str, int]]:
    """Every process this launcher can see: pid -> (ppid, pgid, state, starttime)."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat(int(name))
            if fields is not None:
                table[int(name)] = fields
    return table


def _descendants(roots: set[int], table: dict[int, tuple[int, int, str, int]]) -> set[int]:
    """`roots` and every process below them, by parent links."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _pgid, _state, _start) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = [r for r in roots if r in table]
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        found.add(pid)
        todo.extend(children.get(pid, ()))
    return found


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, sig)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pgid, sig)


class Launcher:
    """The loop: requests from mm, the ends of its children, the stops in progress."""

    def __init__(self, sock: socket.socket, mm_pid: int) -> None:
        self.sock = sock
        self.mm_pid = mm_pid
        self.me = os.getpid()
        self.calls: dict[int, Call] = {}  # id -> call, running or ended (a stop may come late)
        self.by_pid: dict[int, Call] = {}  # the running calls' processes
        self.stops: list[tuple[float, Call, set[int]]] = []  # (when to SIGKILL, call, targets)
        self.retired = False
        self.going = False
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.wake = wake_r
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._terminated)
        signal.signal(signal.SIGHUP, self._terminated)
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    def _terminated(self, *_: Any) -> None:
        # mm's death (PDEATHSIG) ends it; while mm is still its parent the signal came from
        # elsewhere (the thread of mm that started it ended, or a command sent it): ignored
        if os.getppid() != self.mm_pid:
            self.going = True

    def reply(self, kind: bytes, ident: int, value: int) -> None:
        with contextlib.suppress(OSError):
            self.sock.send(REPLY.pack(kind, ident & 0xFFFFFFFF, value))

    def run(self) -> None:
        poller = select.poll()
        poller.register(self.sock.fileno(), select.POLLIN)
        poller.register(self.wake, select.POLLIN)
        while not self.going:
            timeout = None
            if self.stops:
                timeout = max(0, int((min(s[0] for s in self.stops) - time.monotonic()) * 1000))
            try:
                events = poller.poll(timeout)
            except InterruptedError:
                events = []
            for fd, _mask in events:
                if fd == self.wake:
                    with contextlib.suppress(OSError):
                        os.read(self.wake, 4096)
                else:
                    self.receive()
            self.reap()
            now = time.monotonic()
            for stop in [s for s in self.stops if s[0] <= now]:
                self.stops.remove(stop)
                self.finish_stop(stop[1], stop[2])
            if self.retired and not self.by_pid and not self.stops and not self._has_children():
                break
        self.shut_down()

    def _has_children(self) -> bool:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid:
            self._ended(pid, status)
        return True

    def receive(self) -> None:
        try:
            data, fds, _flags, _addr = socket.recv_fds(self.sock, MAX_REQUEST, 4)
        except OSError:
            self.going = True
            return
        if not data:  # mm's end is closed
            self.going = True
            for fd in fds:
                os.close(fd)
            return
        kind = data[:1]
        if kind in (b"S", b"L"):
            self.start(data, fds)
            return
        for fd in fds:
            os.close(fd)
        if kind == b"K" and len(data) == 1 + STOP.size:
            ident, grace = STOP.unpack(data[1:])
            self.begin_stop(ident, grace / 1000)
        elif kind == b"Q":
            self.retired = True

    def start(self, data: bytes, fds: list[int]) -> None:
        ident = 0
        try:
            if data[:1] == b"L":
                if len(fds) != 4:
                    raise OSError(errno.EINVAL, "a large request needs its memfd")
                size = os.fstat(fds[3]).st_size
                if size > MAX_LARGE:
                    raise OSError(errno.E2BIG, "request too large")
                data = b"S" + os.pread(fds[3], size, 0)
                os.close(fds.pop())
            request = json.loads(data[1:])
            ident = int(request["id"])
            if len(fds) != 3:
                raise OSError(errno.EINVAL, "three descriptors expected")
            if self.retired:
                raise OSError(errno.ESTALE, "this launcher takes no more work")
            popen = subprocess.Popen(
                [str(a) for a in request["argv"]],
                stdin=fds[0],
                stdout=fds[1],
                stderr=fds[2],
                cwd=request.get("cwd") or None,
                env={str(k): str(v) for k, v in request["env"].items()},
                # its own group, without a terminal: a session of its own (setsid) costs 1 ms
                # more here (the kernel's autogroup, see _leave_terminal)
                process_group=0,
                close_fds=True,
            )
        except OSError as exc:
            self.reply(b"E", ident, exc.errno or errno.EINVAL)
        except (ValueError, TypeError, KeyError, subprocess.SubprocessError):
            self.reply(b"E", ident, errno.EINVAL)
        else:
            call = Call(ident, popen)
            old = self.calls.pop(ident, None)
            if old is not None:
                self.by_pid.pop(old.pid, None)
            for other in [c for c in self.calls.values() if c.pid == popen.pid]:
                del self.calls[other.ident]  # an ended call whose pid came round again
            self.calls[ident] = call
            self.by_pid[popen.pid] = call
            self.reply(b"P", ident, popen.pid)
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self._ended(pid, status)

    def _ended(self, pid: int, status: int) -> None:
        call = self.by_pid.pop(pid, None)
        if call is None:
            return  # an orphan this launcher adopted
        code = os.waitstatus_to_exitcode(status)
        call.popen.returncode = code  # reaped here: Popen must not try again
        call.running = False
        self.reply(b"X", call.ident, code)
        ended = [c for c in self.calls.values() if not c.running]
        for old in ended[: max(0, len(ended) - KEEP_ENDED)]:  # the oldest first (dict order)
            del self.calls[old.ident]

    def targets(self, call: Call) -> set[int]:
        """What stopping `call` reaches: its process and everything below it, the processes of
        its group, and the orphans this launcher adopted that are the call's (with what they
        started). An orphan's parent is gone, and with it the link to its call: it is taken to
        be of the last call that had started when it started (a background job of an earlier
        call, or a server's helper, is not; of two calls running at once, the later one gets
        the orphans both made since it started)."""
        table = _table()
        roots = {call.pid} if call.running else set()
        roots |= {pid for pid, f in table.items() if f[1] == call.pid}
        running = {c.pid for c in self.by_pid.values()}
        starts = sorted((c.start, c.ident) for c in self.calls.values())
        for pid, (ppid, _pgid, _state, start) in table.items():
            if ppid != self.me or pid in running or start < call.start:
                continue
            owner = [ident for begun, ident in starts if begun <= start]
            if owner and owner[-1] == call.ident:
                roots.add(pid)
        roots.discard(self.me)
        found = _descendants(roots, table)
        return {pid for pid in found if table[pid][2] != "Z" and pid != self.me}

    def begin_stop(self, ident: int, grace: float) -> None:
        call = self.calls.get(ident)
        if call is None:
            self.reply(b"T", ident, 0)
            return
        if grace <= 0:
            self.finish_stop(call, set())
            return
        targets = self.targets(call)
        _signal_group(call.pid, signal.SIGTERM)
        for pid in targets:
            _signal(pid, signal.SIGTERM)
        self.stops.append((time.monotonic() + min(grace, 60.0), call, targets))

    def finish_stop(self, call: Call, earlier: set[int]) -> None:
        """SIGKILL to the call's group and descendants until none is left; then `T`."""
        seen = set(earlier)
        deadline = time.monotonic() + 5.0
        while True:
            _signal_group(call.pid, signal.SIGKILL)
            now = self.targets(call)
            table = _table()
            # what the earlier targets started meanwhile, even when they left the call's tree
            now |= {p for p in _descendants(seen, table) if table[p][2] != "Z"}
            now.discard(self.me)
            for pid in now:
                _signal(pid, signal.SIGKILL)
            self.reap()
            seen |= now
            if not now or time.monotonic() > deadline:
                break
            time.sleep(0.002)
        self.reap()
        self.reply(b"T", call.ident, 0)

    def shut_down(self) -> None:
        """Kill every descendant (every group, setsid ones too), reap them all, and go."""
        deadline = time.monotonic() + 10.0
        while True:
            for call in self.by_pid.values():
                _signal_group(call.pid, signal.SIGKILL)
            table = _table()
            alive = {p for p in _descendants({self.me}, table) if table[p][2] != "Z"}
            alive.discard(self.me)
            for pid in alive:
                _signal(pid, signal.SIGKILL)
            self.reap()
            if not alive and not self._has_children():
                return
            if time.monotonic() > deadline:
                return
            time.sleep(0.002)


def _prctl(libc: Any, option: int, arg: Any = 0, arg3: Any = 0) -> None:
    import ctypes

    zero = ctypes.c_ulong(0)
    if libc.prctl(ctypes.c_int(option), arg, arg3 or zero, zero, zero):
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def _drop_ptrace(libc: Any) -> None:
    """Give up CAP_SYS_PTRACE, for this process and all it starts (its bounding set): with it,
    root may read the files of /proc that Landlock lets through for reading (a process's
    environment, its maps, the list of its descriptors) even of a process that is not dumpable,
    as mm makes itself. A process without the capability cannot."""
    import ctypes

    with contextlib.suppress(OSError):  # no CAP_SETPCAP: the bounding set stays
        _prctl(libc, _PR_CAPBSET_DROP, ctypes.c_ulong(_CAP_SYS_PTRACE))
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable; twice (64 bits)
    if libc.capget(ctypes.byref(header), ctypes.byref(data)) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    for i in range(3):
        data[i] &= ~(1 << _CAP_SYS_PTRACE)
    if libc.capset(ctypes.byref(header), ctypes.byref(data)) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def _leave_terminal() -> None:
    """No controlling terminal, for this process and all it starts, and a process group of its
    own (a Ctrl-C at mm's terminal does not reach it).

    Not `setsid`: a session of its own is an autogroup of its own for the kernel's scheduler,
    and the commands started in it took twice the time to run and be reaped here (2 against 1.2
    times the bare start of `bash -c true`, on a loaded machine). It stays in mm's session and
    drops the terminal (`TIOCNOTTY`, which for a process that does not lead its session clears
    its own terminal only); where that fails, `setsid`."""
    import fcntl
    import termios

    os.setpgid(0, 0)
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return  # no controlling terminal to drop (ENXIO)
    try:
        fcntl.ioctl(fd, termios.TIOCNOTTY)
    except OSError:
        os.setsid()
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):  # a terminal is still there: leave the session
        os.close(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC))
        os.setsid()


def _seccomp_module() -> Any:
    """mm's `core/seccomp.py`, loaded by its path beside this file: it imports nothing of mm,
    and this process runs without mm's package on its path (`-I -S`). Its `install` goes
    through seccomp(2) with SPEC_ALLOW where the kernel has it (no forced speculation
    mitigations for the commands), else prctl."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seccomp.py")
    spec = importlib.util.spec_from_file_location("mm_launcher_seccomp", path)
    if spec is None or spec.loader is None:
        raise OSError(errno.ENOENT, "seccomp.py not found beside the launcher")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def confine(ruleset_fd: int, seccomp: bytes, mm_pid: int) -> tuple[int, int]:
    """Leave the session, ask for mm's death signal, become a subreaper, then no new privileges,
    Landlock and seccomp. Returns (stage, errno) of a failure, (0, 0) when all is done."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.restype = ctypes.c_int
    libc.syscall.restype = ctypes.c_long
    stage = STAGE_SETUP
    try:
        _leave_terminal()
        _prctl(libc, _PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGTERM))
        if os.getppid() != mm_pid:  # mm went before the signal was asked for
            return STAGE_SETUP, errno.ESRCH
        _prctl(libc, _PR_SET_CHILD_SUBREAPER, ctypes.c_ulong(1))
        if ruleset_fd < 0 and not seccomp:
            return 0, 0  # unconfined (sandbox: off): sudo keeps working
        _drop_ptrace(libc)
        stage = STAGE_NO_NEW_PRIVS
        _prctl(libc, _PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1))
        if ruleset_fd >= 0:
            stage = STAGE_LANDLOCK
            done = libc.syscall(
                ctypes.c_long(_SYS_RESTRICT_SELF), ctypes.c_long(ruleset_fd), ctypes.c_uint32(0)
            )
            if done != 0:
                raise OSError(ctypes.get_errno(), "landlock_restrict_self")
            os.close(ruleset_fd)
        if seccomp:
            stage = STAGE_SECCOMP
            try:
                _seccomp_module().install(seccomp)
            except ValueError:
                return stage, errno.EINVAL
    except OSError as exc:
        return stage, exc.errno or errno.EINVAL
    return 0, 0


def main(argv: list[str]) -> int:
    sock_fd, ruleset_fd, mm_pid = (int(a) for a in argv[1:4])
    sock = socket.socket(fileno=sock_fd)
    sock.set_inheritable(False)
    data = sock.recv(MAX_REQUEST)
    if data[:1] != b"I":
        return 1
    stage, err = confine(ruleset_fd, data[1:], mm_pid)
    launcher = Launcher(sock, mm_pid)
    if stage:
        launcher.reply(b"F", stage, err)
        return 1
    launcher.reply(b"R", 0, 0)
    launcher.run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
