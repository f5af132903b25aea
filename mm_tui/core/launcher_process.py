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
- as root, when mm asks (`namespaces` as its fourth argument, then an `N` message: the items
  to hide and the rights of /proc), goes on in PID and mount namespaces of its own
  (`_enter_namespaces`): its first process stays outside as the keeper, the child carries on;
- takes no new privileges, confines itself with the Landlock ruleset mm built (when given one)
  and installs the seccomp filter mm sent (when given one), in that order.

It starts with an empty environment and holds no secret: mm gives each command its own, mm's
secrets left out, which it takes on until another comes (`Launcher.environment`). Each command
leads a process group of its own, without a terminal (none can become theirs: only a session's
leader acquires one).

The wire, a SOCK_SEQPACKET socketpair (one message, one request):

- mm -> launcher: with namespaces, `N` + JSON {"hide": [paths], "proc": rights} first; then
  `I` + seccomp filter (raw `struct sock_filter` array, may be empty);
  `S` + JSON {"id", "argv", "cwd", "pid"} + NUL + the environment in JSON, with the child's
  stdin, stdout and stderr passed as three descriptors (SCM_RIGHTS), or `L` with a fourth one,
  a memfd holding both, when they are too large for one message; `K` + id + grace in ms: stop
  that call (SIGTERM to its group and to every descendant that left it, SIGKILL to all of them
  after the grace, repeated until none is left); `Q`: take no more work, exit when no child is
  left.
- launcher -> mm: 9 bytes, kind + u32 + i32: `R` ready; `F` (stage, errno) confinement failed;
  `P` (id, pid) started; `E` (id, errno) could not start; `X` (id, returncode as Popen gives
  it) the call's process ended and was reaped; `T` (id, 0) a stop is done.

When mm's end closes (mm exited, crashed, was killed), it kills every descendant it has, reaps
them, and exits.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
import select
import signal
import socket
import stat
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
DROPPED_CAPABILITIES = {
    9: "CAP_LINUX_IMMUTABLE",  # chattr +i of a file outside the project
    16: "CAP_SYS_MODULE",  # a kernel module: code in the kernel
    17: "CAP_SYS_RAWIO",  # I/O ports, raw memory
    19: "CAP_SYS_PTRACE",  # trace and read a process that is not dumpable (mm)
    21: "CAP_SYS_ADMIN",  # namespaces and mounts (open_tree clones a folder from under a cover)
    22: "CAP_SYS_BOOT",  # reboot, and kexec: another kernel
    32: "CAP_MAC_OVERRIDE",
    33: "CAP_MAC_ADMIN",
    34: "CAP_SYSLOG",  # the kernel's log, and its addresses
    38: "CAP_PERFMON",
    39: "CAP_BPF",  # programs in the kernel
}
"""What a confined launcher gives up for itself and all it starts, as root: the powers that go
past Landlock (it confines paths, TCP and signals, not these)."""
_CAPABILITY_VERSION_3 = 0x20080522
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_RULE_PATH_BENEATH = 1
_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 16384
_MS_SLAVE = 1 << 19
_MNT_DETACH = 2

STAGE_NO_NEW_PRIVS = 1
STAGE_LANDLOCK = 2
STAGE_SECCOMP = 3
STAGE_SETUP = 4
STAGE_NAMESPACES = 5


class Call:
    """One started command: its process (which leads its own group) and when it started."""

    def __init__(self, ident: int, popen: subprocess.Popen[bytes], start: int) -> None:
        self.ident = ident
        self.popen = popen
        self.pid = popen.pid
        self.start = start  # no later than its process's start time in /proc (`_stat`)
        self.running = True


_TICKS = os.sysconf("SC_CLK_TCK")


def _ticks_now() -> int:
    """The clock that /proc's start times count (clock ticks since boot, sleep included).
    Taken before a start, it is no later than the started process's: reading the time from
    /proc/<pid>/stat instead waited for the new process's exec (that read takes its memory
    map's lock) and cost a tenth of a millisecond of every call."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * _TICKS)


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

    def __init__(self, sock: socket.socket, mm_pid: int, namespaced: bool = False) -> None:
        self.sock = sock
        self.mm_pid = mm_pid
        self.me = os.getpid()  # 1 in a PID namespace of its own
        self.calls: dict[int, Call] = {}  # id -> call, running or ended (a stop may come late)
        self.by_pid: dict[int, Call] = {}  # the running calls' processes
        self.ended_pids: dict[int, int] = {}  # pid -> id of the ended call it was, still kept
        self.stops: list[tuple[float, Call, set[int]]] = []  # (when to SIGKILL, call, targets)
        self.retired = False
        self.going = False
        self.environ: bytes | None = None  # the JSON of the environment it holds (`environment`)
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.wake = wake_r
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        # The first process of a PID namespace gets from its commands only the signals it has
        # a handler for: SIGKILL and SIGSTOP never, these do nothing (not SIG_IGN: the commands
        # would inherit it). It goes when mm's end of the socket closes, or with its keeper
        # (`_keep`, by PDEATHSIG).
        ending = (lambda *_: None) if namespaced else self._terminated
        signal.signal(signal.SIGTERM, ending)
        signal.signal(signal.SIGHUP, ending)
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
            head, _, environment = data[1:].partition(b"\0")
            request = json.loads(head)
            ident = int(request["id"])
            self.environment(environment)
            if len(fds) != 3:
                raise OSError(errno.EINVAL, "three descriptors expected")
            if self.retired:
                raise OSError(errno.ESTALE, "this launcher takes no more work")
            start = _ticks_now()
            popen = subprocess.Popen(
                [str(a) for a in request["argv"]],
                stdin=fds[0],
                stdout=fds[1],
                stderr=fds[2],
                cwd=request.get("cwd") or None,
                env=None,  # this process's: the command's (`environment`)
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
            call = Call(ident, popen, start)
            old = self.calls.pop(ident, None)
            if old is not None:
                self.by_pid.pop(old.pid, None)
            ended = self.calls.get(self.ended_pids.pop(popen.pid, -1))
            if ended is not None and ended.pid == popen.pid and not ended.running:
                del self.calls[ended.ident]  # an ended call whose pid came round again
            self.calls[ident] = call
            self.by_pid[popen.pid] = call
            if request.get("pid", True):
                self.reply(b"P", ident, popen.pid)
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def environment(self, encoded: bytes) -> None:
        """Take on the command's environment (JSON), for Popen to pass as it is (env=None).

        Why not Popen's `env`: it copies and encodes every variable at each start, forty of
        them for a bash call, and the request's JSON has them to decode first; a bash call's
        environment is the same from call to call (mm sends the same bytes), so here that is
        done once. It holds what every command gets, mm's secrets left out (`command_env`);
        this process's environment block, the one /proc shows, stays the empty one it
        started with."""
        if encoded == self.environ:
            return
        env = json.loads(encoded)
        if not isinstance(env, dict):
            raise TypeError("the environment is a JSON object")
        self.environ = None  # until it is whole
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
        self.environ = encoded

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
        if self.calls.get(call.ident) is call:
            self.ended_pids[pid] = call.ident
        # the ended calls past KEEP_ENDED go, the oldest first (dict order), found without a
        # walk through all of them at every end (and the pid's earlier call at every start):
        # the two walks cost 8 us of every call once 256 had ended
        excess = len(self.calls) - len(self.by_pid) - KEEP_ENDED
        if excess > 0:
            ended = (c for c in self.calls.values() if not c.running)
            for old in list(itertools.islice(ended, excess)):
                del self.calls[old.ident]
                if self.ended_pids.get(old.pid) == old.ident:
                    del self.ended_pids[old.pid]

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


def _drop_capabilities(libc: Any, every: bool = False) -> None:
    """Give up `DROPPED_CAPABILITIES` (`every`: all of them, as a plain user's launcher does
    in the user namespace it made), for this process and all it starts (its bounding set).
    CAP_SYS_PTRACE: with it, root may trace and read the memory of a process that is not
    dumpable, as mm makes itself; without it, the kernel still lets the same user open that
    process's environment and list its descriptors (PTRACE_MODE_READ, which Landlock does not
    refuse): what the PID namespace of `_enter_namespaces` takes away, where it can be made.
    CAP_SYS_ADMIN: with it, root in the namespaces could clone a mount without the covers on
    it (open_tree) and read what they cover. A plain user has none of them outside a user
    namespace: nothing changes then."""
    import ctypes

    dropped = range(64) if every else DROPPED_CAPABILITIES
    for cap in dropped:
        with contextlib.suppress(OSError):  # no CAP_SETPCAP, or a kernel without that cap
            _prctl(libc, _PR_CAPBSET_DROP, ctypes.c_ulong(cap))
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: low 32 bits, then high
    if libc.capget(ctypes.byref(header), ctypes.byref(data)) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    for cap in dropped:
        base, bit = (0, cap) if cap < 32 else (3, cap - 32)
        for i in range(3):
            data[base + i] &= ~(1 << bit)
    if libc.capset(ctypes.byref(header), ctypes.byref(data)) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def _mount(libc: Any, source: str | None, target: str, kind: str | None, flags: int) -> None:
    import ctypes

    def c(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    if libc.mount(c(source), c(target), c(kind), ctypes.c_ulong(flags), None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def _unmount(libc: Any, target: str) -> None:
    import ctypes

    if libc.umount2(os.fsencode(target), ctypes.c_int(_MNT_DETACH)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"umount {target}: {os.strerror(err)}")


def _proc_mounts() -> list[str]:
    """Where a proc file system is mounted, from this process's mount table."""
    found = []
    with open("/proc/self/mountinfo", "rb") as f:
        for line in f.read().decode(errors="surrogateescape").splitlines():
            fields = line.split(" ")
            if " - proc " in line and len(fields) > 4:
                # octal escapes: a space is \040 (the kernel escapes space, tab, newline, \\)
                where = fields[4]
                for code in ("\\040", "\\011", "\\012", "\\134"):
                    where = where.replace(code, chr(int(code[1:], 8)))
                found.append(where)
    return found


def add_rule(libc: Any, ruleset_fd: int, target: int, rights: int) -> int:
    """landlock_add_rule: `rights` beneath the file or folder open as `target` (O_PATH); 0, or
    the errno. Here, for the launcher's own /proc, and for mm's rulesets (core/sandbox.py):
    this file imports nothing of mm, so mm takes it from here."""
    import ctypes

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    rule = PathBeneath(rights, target)
    done = libc.syscall(
        ctypes.c_long(_SYS_ADD_RULE),
        ctypes.c_long(ruleset_fd),
        ctypes.c_long(_RULE_PATH_BENEATH),
        ctypes.byref(rule),
        ctypes.c_uint32(0),
    )
    return ctypes.get_errno() if done != 0 else 0


def _grant(libc: Any, ruleset_fd: int, path: str, rights: int) -> None:
    """Add to the ruleset a rule that gives `path` `rights`: for the /proc mounted here, a file
    system the ruleset mm built has never seen (its rules name the machine's /proc)."""
    target = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        err = add_rule(libc, ruleset_fd, target, rights)
        if err:
            raise OSError(err, f"landlock_add_rule {path}: {os.strerror(err)}")
    finally:
        os.close(target)


def _keep(child: int, mm_pid: int, closing: tuple[int, ...]) -> None:
    """The launcher's first process, outside the PID namespace its child leads: it holds
    nothing (its socket and ruleset closed), takes mm's death signal and answers it by exiting,
    which kills its child (PDEATHSIG) and with it the namespace, every process in it. Exits
    with the child's status. No command can see, signal or trace it: it is not in their
    namespace."""

    def gone(*_: Any) -> None:
        if os.getppid() != mm_pid:  # see Launcher._terminated
            os._exit(1)

    signal.signal(signal.SIGTERM, gone)
    signal.signal(signal.SIGHUP, gone)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for fd in closing:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
    while True:
        try:
            _pid, status = os.waitpid(child, 0)
        except ChildProcessError:
            os._exit(1)
        code = os.waitstatus_to_exitcode(status)
        os._exit(code if code >= 0 else 128 - code)


def _enter_namespaces(libc: Any, hide: list[str], mm_pid: int, closing: tuple[int, ...]) -> None:
    """Go on in a PID namespace and a mount namespace of its own, where /proc shows only the
    launcher and what it started, and where each item of `hide` is covered: a file by one that
    cannot be opened, a folder by an empty read-only one. Returns in the namespace's first
    process (pid 1); the process that called it stays outside as its keeper (`_keep`) and
    never returns.

    Why: Landlock keeps a command from ptracing mm and from reading its memory, but the kernel
    lets a process of the same user read another's environment and list its descriptors
    through /proc with no more than PTRACE_MODE_READ, which root passes even without
    CAP_SYS_PTRACE. In its own PID namespace mm is not there to be named. And Landlock only
    grants: a denied file or folder inside the project takes from the folder above the rights
    that would reach it (new files there could not be written), where a mount over it simply
    hides it and leaves the folder above whole.

    Root has the right to make them (CAP_SYS_ADMIN, outside a container that took it away). A
    plain user first enters a user namespace of its own, where it is itself (its uid and gid
    map to themselves) with every capability over these namespaces and none over the machine;
    the commands it starts have none at all (a uid other than 0 loses them at exec). There the
    mounts it inherits are locked to it: the machine's /proc is covered by the new one instead
    of unmounted, and a cover could not be lifted by a command that made a user namespace of
    its own either (the kernel refuses to unmount a locked mount, or to copy a mount without
    the locked mounts on it). Where any of it fails (user namespaces refused, as some systems
    do to plain users, or a /proc partly hidden, as in a container), mm goes on with Landlock
    alone."""
    import ctypes

    user = os.geteuid() != 0
    flags = _CLONE_NEWPID | _CLONE_NEWNS | (_CLONE_NEWUSER if user else 0)
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(ctypes.c_int(flags)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare: {os.strerror(err)}")
    if user:
        for name, text in (("uid_map", f"{uid} {uid} 1"), ("setgroups", "deny")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
        with open("/proc/self/gid_map", "w") as f:
            f.write(f"{gid} {gid} 1")
    alive_r, alive_w = os.pipe()  # the keeper holds its end for as long as it lives
    child = os.fork()
    if child:
        os.close(alive_r)
        _keep(child, mm_pid, closing)
    os.close(alive_w)
    os.setpgid(0, 0)  # a group of its own, as the keeper has
    _prctl(libc, _PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL))
    if select.select([alive_r], [], [], 0)[0]:  # end of file: the keeper went already
        os._exit(1)
    os.close(alive_r)
    # what is mounted here stays here; what the person mounts later still shows
    _mount(libc, None, "/", None, _MS_REC | _MS_SLAVE)
    # other views of the whole machine's processes: covered (a plain user), or unmounted at
    # the end (root)
    others = [where for where in _proc_mounts() if where != "/proc"] if user else []
    if not user:
        # the machine's /proc (every process on it) goes, with what is mounted below it:
        # nothing is left under the /proc mounted here (a command cannot unmount, Landlock
        # forbids it, but there is nothing to find if one could)
        _unmount(libc, "/proc")
    # an empty file and folder to cover the hidden items with, in a scratch tmpfs, detached
    # once the covers are in place
    plain = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    _mount(libc, "mm", "/proc", "tmpfs", plain)
    os.mkdir("/proc/folder", 0)
    # A file is covered by one that cannot be opened (EACCES, as Landlock answers), where an
    # empty file would read as an empty secret: root's commands keep CAP_DAC_OVERRIDE, so for
    # them a device node on a mount without devices; a plain user's cannot pass a mode of 0
    # (and cannot make a device node).
    if user:
        os.close(os.open("/proc/file", os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0))
    else:
        os.mknod("/proc/file", stat.S_IFCHR, os.makedev(0, 0))
    for path in hide + others:
        if not os.path.isabs(path) or os.path.islink(path) or not os.path.lexists(path):
            continue  # a link: Landlock judges where it leads
        cover = "/proc/folder" if os.path.isdir(path) else "/proc/file"
        _mount(libc, cover, path, None, _MS_BIND)
        _mount(libc, None, path, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | plain)
    _unmount(libc, "/proc")
    _mount(libc, "proc", "/proc", "proc", plain)
    if not user:
        for where in _proc_mounts():
            if where != "/proc":
                _unmount(libc, where)


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


def confine(
    ruleset_fd: int,
    seccomp: bytes,
    mm_pid: int,
    hide: list[str] | None = None,
    sock_fd: int = -1,
    proc_rights: int = 0,
) -> tuple[int, int]:
    """Leave the session, ask for mm's death signal, become a subreaper, enter namespaces of
    its own (when `hide` is given, see `_enter_namespaces`), then no new privileges, Landlock
    and seccomp. Returns (stage, errno) of a failure, (0, 0) when all is done."""
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
        if hide is not None:
            stage = STAGE_NAMESPACES
            _enter_namespaces(libc, hide, mm_pid, (sock_fd, ruleset_fd))
            if ruleset_fd >= 0 and proc_rights:
                _grant(libc, ruleset_fd, "/proc", proc_rights)
            stage = STAGE_SETUP
        _drop_capabilities(libc, every=hide is not None and os.geteuid() != 0)
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
    hide = None
    proc_rights = 0
    if argv[4:5] == ["namespaces"]:
        data = sock.recv(MAX_REQUEST)
        if data[:1] != b"N":
            return 1
        try:
            asked = json.loads(data[1:])
            hide = [str(path) for path in asked["hide"]]
            proc_rights = int(asked["proc"])
        except (ValueError, TypeError, KeyError):
            return 1
    data = sock.recv(MAX_REQUEST)
    if data[:1] != b"I":
        return 1
    stage, err = confine(ruleset_fd, data[1:], mm_pid, hide, sock_fd, proc_rights)
    launcher = Launcher(sock, mm_pid, namespaced=hide is not None)
    if stage:
        launcher.reply(b"F", stage, err)
        return 1
    launcher.reply(b"R", 0, 0)
    launcher.run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
