"""What a hostile command tries against the mm that runs it (run by the model as a bash command
in tests/tools/test_sandbox_boundary.py): every way into mm's memory, environment, descriptors and
life, through each of its threads, as an attacker would.

mm's pid is given in the file named by the first argument (an attacker can guess it: pids are
few), else found as
the parent of the command's parent (the launcher), or of the command itself (what mm did before
it had a launcher). A launcher in PID and mount namespaces of its own shows the command no
process but its own: mm is then not there to be named, and every attempt is refused. Each attempt prints one line, `ALLOWED what` or
`REFUSED what: error`; what a read returns is scanned for the keys' marker (`MARKER`) and any
hit printed in full, so that a leak reaches the model's transcript where the test looks. The
kills come last: a kill that works ends mm.

Standard library only; run as `python3 attack_mm.py`.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import stat
import sys
import time

MARKER = b"mmtestkey-"
KEY = re.compile(rb"mmtestkey-[A-Za-z0-9]+")
PTRACE_SEIZE = 0x4206
PTRACE_DETACH = 17


def parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        data = f.read()
    return int(data[data.rfind(b")") + 2 :].split()[1])


def is_mm(pid: int) -> bool:
    try:
        line = read(f"/proc/{pid}/cmdline")
    except OSError:
        return False
    return b"mm_tui" in line and b"launcher_process" not in line


def find_mm() -> int:
    pid = os.getppid()  # bash -c
    for _ in range(4):
        if is_mm(pid):
            return pid
        pid = parent(pid)
    raise SystemExit("mm not found above this command")


def given_mm(path: str) -> int:
    """The pid the test wrote, once it is there (the test writes it as it starts mm)."""
    for _ in range(6000):
        try:
            with open(path) as f:
                text = f.read().strip()
            if text:
                return int(text)
        except FileNotFoundError:
            pass
        time.sleep(0.01)
    raise SystemExit(f"no pid in {path}")


def leak(what: str, data: bytes) -> None:
    for hit in set(KEY.findall(data)):
        print(f"LEAKED {what}: {hit.decode()}")


def attempt(what: str, action) -> None:  # noqa: ANN001 - a script
    try:
        data = action()
    except OSError as exc:
        print(f"REFUSED {what}: {exc.strerror}")
        return
    print(f"ALLOWED {what}")
    if isinstance(data, bytes):
        leak(what, data)


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def read_fd(path: str) -> bytes:
    """A descriptor of mm's, opened anew through /proc: a regular file's content (a pipe, a
    socket or a terminal is only opened: reading it could wait for ever)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return os.pread(fd, 1 << 20, 0)
    finally:
        os.close(fd)


def read_memory(pid: int, tid: int) -> bytes:
    """Every readable mapping of mm, through this thread's mem file."""
    found = []
    maps = read(f"/proc/{pid}/task/{tid}/maps").decode()
    fd = os.open(f"/proc/{pid}/task/{tid}/mem", os.O_RDONLY)
    try:
        for line in maps.splitlines():
            span, perms = line.split()[:2]
            if not perms.startswith("r"):
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            if end - start > 256 * 1024 * 1024:
                continue
            try:
                found.append(os.pread(fd, end - start, start))
            except OSError:
                continue
    finally:
        os.close(fd)
    return b"".join(found)


def seize(tid: int) -> bytes:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.restype = ctypes.c_long
    args = (ctypes.c_long(tid), ctypes.c_void_p(0), ctypes.c_void_p(0))
    if libc.ptrace(ctypes.c_long(PTRACE_SEIZE), *args) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    libc.ptrace(ctypes.c_long(PTRACE_DETACH), *args)
    return b""


def main() -> None:
    mm = given_mm(sys.argv[1]) if len(sys.argv) > 1 else find_mm()
    launcher = os.getppid() if os.getppid() != mm else None
    print(f"mm is {mm}")
    seen = [p for p in os.listdir("/proc") if p.isdigit() and is_mm(int(p))]
    print(f"mm processes seen: {len(seen)}")
    try:
        tids = sorted(int(t) for t in os.listdir(f"/proc/{mm}/task"))
    except OSError as exc:
        print(f"REFUSED task list: {exc.strerror}")
        tids = [mm]
    attempt("environ", lambda: read(f"/proc/{mm}/environ"))
    for tid in tids:
        attempt(f"task {tid} environ", lambda tid=tid: read(f"/proc/{mm}/task/{tid}/environ"))
        attempt(f"task {tid} mem", lambda tid=tid: read_memory(mm, tid))
        attempt(f"ptrace seize {tid}", lambda tid=tid: seize(tid))
    for where in [f"/proc/{mm}", *(f"/proc/{mm}/task/{tid}" for tid in tids)]:
        attempt(
            f"fd list {where}", lambda where=where: " ".join(os.listdir(f"{where}/fd")).encode()
        )
        for fd in range(16):
            path = f"{where}/fd/{fd}"
            try:
                os.lstat(path)
            except FileNotFoundError:
                continue
            except OSError:
                pass
            attempt(f"open {path}", lambda path=path: read_fd(path))
    if launcher is not None:
        print(f"launcher is {launcher}")
        data = read(f"/proc/{launcher}/environ")
        print(f"launcher environ: {len(data)} bytes")
        leak("launcher environ", data)
    sys.stdout.flush()
    for tid in tids:  # last: one that works ends mm
        attempt(f"kill {tid}", lambda tid=tid: os.kill(tid, signal.SIGKILL))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
