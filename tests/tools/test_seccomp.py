"""The seccomp filter of confined commands (mm_tui/core/seccomp.py), attacked as a command would.

Each attack runs in a child Python that loads the module by its file path (nothing else of mm),
installs the filter and tries the operation; the same child without the filter shows the
operation works on this kernel, so a refusal is the filter's (EPERM, where the kernel itself
would say EPROTONOSUPPORT or EAFNOSUPPORT). Every filtered child also checks that an MPTCP socket
is refused in it, so no test passes with the filter missing.

The rule itself is checked over many (family, type, flags, protocol) by a small interpreter of
the classic-BPF subset the module emits, against a plain-Python statement of the rule, for every
architecture it builds a program for.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import temp_folder

from mm_tui.core import seccomp

MODULE = Path(__file__).resolve().parents[2] / "mm_tui" / "core" / "seccomp.py"
MACHINE = platform.machine()

IPPROTO_MPTCP = 262
IPPROTO_SCTP = 132
IPPROTO_SMC = 256
SOCK_RDM = 4
SOCK_DCCP = 6
SOCK_PACKET = 10
FLAGS = socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC

# The numbers, stated here rather than taken from the module, so that a wrong one there shows:
# audit architecture, socket, socketpair, and io_uring's three calls (the same everywhere).
NUMBERS = {
    "x86_64": (0xC000003E, 41, 53),
    "aarch64": (0xC00000B7, 198, 199),
    "riscv64": (0xC00000F3, 198, 199),
}
IO_URING = (425, 426, 427)
# sendto, sendmsg, sendmmsg (MSG_FASTOPEN connects inside a send) and setsockopt (TCP_ULP).
_GENERIC_SENDS = {"sendto": 206, "sendmsg": 211, "sendmmsg": 269, "setsockopt": 208}
SENDS = {
    "x86_64": {"sendto": 44, "sendmsg": 46, "sendmmsg": 307, "setsockopt": 54},
    "aarch64": _GENERIC_SENDS,
    "riscv64": _GENERIC_SENDS,
}
MSG_FASTOPEN = 0x20000000
TCP_ULP = 31
AUDIT_I386 = 0x40000003
AUDIT_ARM = 0x40000028

ALLOW = 0x7FFF0000
KILL = 0x80000000
EPERM = 0x00050000 | errno.EPERM
ENOSYS = 0x00050000 | errno.ENOSYS

needs_filter = pytest.mark.skipif(
    MACHINE not in NUMBERS or not sys.platform.startswith("linux"),
    reason=f"no filter is built for {sys.platform}/{MACHINE}",
)

# What every child runs first: the module alone, by path; the filter when asked; a guard that
# the filter is really in place (an MPTCP socket is refused), and helpers for the attacks.
PRELUDE = r"""
import ctypes, errno, importlib.util, json, os, socket, sys
spec = importlib.util.spec_from_file_location("seccomp_alone", sys.argv[1])
seccomp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(seccomp)
FILTERED = sys.argv[2] == "filtered"
ARGS = json.loads(sys.argv[3])
SOCKET_NR = ARGS["socket_nr"]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
results = {"mm modules": sorted(m for m in sys.modules if m.startswith("mm_tui"))}

def attempt(action):
    try:
        action()
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    return "ok"

def make(family, type_, protocol=0):
    socket.socket(family, type_, protocol).close()

def raw_socket(family, type_, protocol):
    "socket(2) with whole 64-bit arguments, as an attacker would pass them."
    args = [ctypes.c_ulong(v) for v in (family, type_, protocol)]
    fd = libc.syscall(ctypes.c_long(SOCKET_NR), *args)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "socket")
    os.close(fd)

def raw_socketpair(family, type_, protocol):
    "socketpair(2), the same way."
    pair = (ctypes.c_int * 2)()
    args = [ctypes.c_ulong(v) for v in (family, type_, protocol)]
    if libc.syscall(ctypes.c_long(SOCKET_NR + ARGS["pair_offset"]), *args, pair) < 0:
        raise OSError(ctypes.get_errno(), "socketpair")
    os.close(pair[0])
    os.close(pair[1])

if FILTERED:
    seccomp.install(seccomp.network_filter())
    results["guard"] = attempt(lambda: make(socket.AF_INET, socket.SOCK_STREAM, 262))
"""


def child(
    body: str,
    *,
    filtered: bool,
    module: Path = MODULE,
    prefix: tuple[str, ...] = (),
    **args: Any,
) -> subprocess.CompletedProcess[str]:
    """Run PRELUDE + `body` in a fresh `python -I` (with the filter when `filtered`), after
    `prefix` (setpriv, to run it as another user); `args` reach it as ARGS."""
    _, socket_nr, socketpair_nr = NUMBERS.get(MACHINE, (0, 0, 0))
    args.update(socket_nr=socket_nr, pair_offset=socketpair_nr - socket_nr)
    argv = [*prefix, sys.executable, "-I", "-c", PRELUDE + body]
    argv += [str(module), "filtered" if filtered else "bare", json.dumps(args)]
    # Nothing of the person's environment: no home, no Python settings (-I ignores them too).
    env = {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C.UTF-8"}
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)


def results(body: str, *, filtered: bool, **args: Any) -> dict[str, Any]:
    """What the child's `results` held; with the filter, after checking it was in place."""
    done = child(body + "\nprint(json.dumps(results))", filtered=filtered, **args)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found.pop("mm modules") == []
    if filtered:
        assert found.pop("guard") == "EPERM", "the filter is not in place"
    return found


@pytest.fixture
def tcp_port() -> Iterator[int]:
    """A real TCP listener of the test's own on 127.0.0.1; its port."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


def mptcp_enabled() -> bool:
    try:
        return Path("/proc/sys/net/mptcp/enabled").read_text().strip() == "1"
    except OSError:
        return False


MPTCP_ATTACK = r"""
def connect(family, type_, host):
    with socket.socket(family, type_, 262) as s:
        s.settimeout(30)
        s.connect((host, ARGS["port"]))

def listen(family, type_, host):
    with socket.socket(family, type_, 262) as s:
        s.bind((host, 0))
        s.listen()

for name, type_ in (("", socket.SOCK_STREAM), (" +flags", socket.SOCK_STREAM | ARGS["flags"])):
    results["create" + name] = attempt(lambda: make(socket.AF_INET, type_, 262))
    results["connect" + name] = attempt(lambda: connect(socket.AF_INET, type_, "127.0.0.1"))
    results["listen" + name] = attempt(lambda: listen(socket.AF_INET, type_, "127.0.0.1"))
    results["create v6" + name] = attempt(lambda: make(socket.AF_INET6, type_, 262))
# The kernel reads int arguments: high bits set above AF_INET, SOCK_STREAM or 262 change nothing
# for it, and must change nothing for the filter either.
results["high family"] = attempt(lambda: raw_socket((1 << 32) | socket.AF_INET, 1, 262))
results["high type"] = attempt(lambda: raw_socket(socket.AF_INET, (7 << 40) | 1, 262))
results["high protocol"] = attempt(lambda: raw_socket(socket.AF_INET, 1, (1 << 33) | 262))
"""


@needs_filter
def test_mptcp_sockets_are_refused_by_the_filter(tcp_port: int) -> None:
    found = results(MPTCP_ATTACK, filtered=True, port=tcp_port, flags=FLAGS)
    assert found == dict.fromkeys(found, "EPERM")
    assert len(found) == 11


@needs_filter
@pytest.mark.skipif(not mptcp_enabled(), reason="this kernel has no MPTCP (net.mptcp.enabled)")
def test_mptcp_sockets_connect_and_listen_without_the_filter(tcp_port: int) -> None:
    """The attack the filter stops works on this kernel: MPTCP connects to a TCP listener (it
    falls back to TCP) and listens, high bits and all."""
    found = results(MPTCP_ATTACK, filtered=False, port=tcp_port, flags=FLAGS)
    assert found == dict.fromkeys(found, "ok")
    assert len(found) == 11


UNDER_LANDLOCK = r"""
import struct
# Landlock refusing TCP bind and connect (ABI 4): landlock_create_ruleset, then restrict_self.
attr = struct.pack("=QQ", 0, 3)  # handled_access_fs, handled_access_net: BIND_TCP | CONNECT_TCP
ruleset = libc.syscall(ctypes.c_long(444), attr, ctypes.c_size_t(16), ctypes.c_uint32(0))
if ruleset < 0:
    results["landlock"] = errno.errorcode[ctypes.get_errno()]
else:
    assert libc.prctl(38, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)) == 0
    assert libc.syscall(ctypes.c_long(446), ctypes.c_long(ruleset), ctypes.c_uint32(0)) == 0
    results["landlock"] = "ok"

def connect(protocol):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM, protocol) as s:
        s.settimeout(30)
        s.connect(("127.0.0.1", ARGS["port"]))

results["tcp"] = attempt(lambda: connect(0))
results["mptcp"] = attempt(lambda: connect(262))
"""


@needs_filter
@pytest.mark.parametrize("filtered", [False, True], ids=["landlock alone", "with the filter"])
def test_mptcp_goes_around_landlock_unless_the_filter_is_there(
    tcp_port: int, filtered: bool
) -> None:
    """The attack as it is: under Landlock's TCP rules a TCP connect is refused (EACCES) and an
    MPTCP one goes through; with the filter it is refused too (EPERM)."""
    found = results(UNDER_LANDLOCK, filtered=filtered, port=tcp_port)
    if found["landlock"] != "ok":
        pytest.skip(f"this kernel's Landlock does not handle TCP ({found['landlock']})")
    if not filtered and not mptcp_enabled():
        pytest.skip("this kernel has no MPTCP (net.mptcp.enabled)")
    assert found == {"landlock": "ok", "tcp": "EACCES", "mptcp": "EPERM" if filtered else "ok"}


OTHER_STREAMS = r"""
for family in (socket.AF_INET, socket.AF_INET6):
    for type_, protocol in ARGS["cases"]:
        for flags in (0, ARGS["flags"]):
            key = f"{family} {type_ | flags} {protocol}"
            results[key] = attempt(lambda: make(family, type_ | flags, protocol))
"""

SCTP_CASES = [(socket.SOCK_STREAM, IPPROTO_SCTP), (socket.SOCK_SEQPACKET, IPPROTO_SCTP)]


@needs_filter
def test_sctp_smc_and_other_stream_types_are_refused_by_the_filter() -> None:
    """EPERM is the filter's answer; without it the kernel says EPROTONOSUPPORT or
    ESOCKTNOSUPPORT (no module) or makes the socket."""
    cases = [
        *SCTP_CASES,
        (socket.SOCK_STREAM, IPPROTO_SMC),
        (socket.SOCK_STREAM, 17),
        (socket.SOCK_SEQPACKET, 0),
        (SOCK_RDM, 0),
        (SOCK_DCCP, 0),
        (SOCK_PACKET, 0),
        (socket.SOCK_RAW, socket.IPPROTO_TCP),
        (socket.SOCK_RAW, socket.IPPROTO_ICMP),
    ]
    found = results(OTHER_STREAMS, filtered=True, cases=cases, flags=FLAGS)
    assert found == dict.fromkeys(found, "EPERM")
    assert len(found) == 2 * 2 * len(cases)


@needs_filter
def test_sctp_is_made_without_the_filter() -> None:
    found = results(OTHER_STREAMS, filtered=False, cases=SCTP_CASES, flags=0)
    if set(found.values()) <= {"EPROTONOSUPPORT", "ESOCKTNOSUPPORT"}:
        pytest.skip("this kernel has no SCTP module: the filter's EPERM is all there is to see")
    assert found == dict.fromkeys(found, "ok")


@needs_filter
def test_tcp_udp_unix_and_netlink_sockets_still_work(tcp_port: int) -> None:
    """The filter takes nothing away that Landlock judges (TCP is made, and connects here where
    no Landlock is in place) or that ordinary commands need; the flags change nothing."""
    body = r"""
def tcp(family, type_, protocol, host, port):
    with socket.socket(family, type_, protocol) as s:
        s.setblocking(True)
        s.settimeout(30)
        s.connect((host, port))

def listen():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM | ARGS["flags"]) as s:
        s.bind(("127.0.0.1", 0))
        s.listen()

def udp():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver:
        receiver.bind(("127.0.0.1", 0))
        receiver.settimeout(30)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM | ARGS["flags"], 17) as sender:
            sender.sendto(b"dns?", receiver.getsockname())
        assert receiver.recv(10) == b"dns?"

def pair(type_):
    a, b = socket.socketpair(socket.AF_UNIX, type_)
    with a, b:
        a.sendall(b"x")
        assert b.recv(1) == b"x"

for flags in (0, ARGS["flags"]):
    for protocol in (0, 6):
        results[f"tcp {flags} {protocol}"] = attempt(
            lambda: tcp(socket.AF_INET, socket.SOCK_STREAM | flags, protocol, "127.0.0.1", ARGS["port"]))
        results[f"tcp6 {flags} {protocol}"] = attempt(
            lambda: make(socket.AF_INET6, socket.SOCK_STREAM | flags, protocol))
    results[f"unix pair {flags}"] = attempt(lambda: pair(socket.SOCK_STREAM | flags))
    results[f"unix dgram pair {flags}"] = attempt(lambda: pair(socket.SOCK_DGRAM | flags))
    results[f"unix seqpacket {flags}"] = attempt(lambda: make(socket.AF_UNIX, socket.SOCK_SEQPACKET | flags))
    results[f"udp6 {flags}"] = attempt(lambda: make(socket.AF_INET6, socket.SOCK_DGRAM | flags))
    results[f"netlink {flags}"] = attempt(lambda: make(socket.AF_NETLINK, socket.SOCK_RAW | flags))
results["listen"] = attempt(listen)
results["udp"] = attempt(udp)
"""
    found = results(body, filtered=True, port=tcp_port, flags=FLAGS)
    assert found == dict.fromkeys(found, "ok")
    assert len(found) == 2 + 2 * 9


HIDDEN_CONNECTS = r"""
def fast_open(send):
    with socket.socket() as s:  # blocking: with a timeout the send would say EINPROGRESS
        send(s, b"GET / HTTP/1.0\r\n\r\n", ("127.0.0.1", ARGS["port"]))

def ulp(name):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_TCP, 31, name)

results["sendto fast open"] = attempt(lambda: fast_open(lambda s, data, to: s.sendto(data, socket.MSG_FASTOPEN, to)))
results["sendmsg fast open"] = attempt(lambda: fast_open(lambda s, data, to: s.sendmsg([data], [], socket.MSG_FASTOPEN, to)))
results["ulp smc"] = attempt(lambda: ulp(b"smc"))
results["ulp mptcp"] = attempt(lambda: ulp(b"mptcp"))
"""


@needs_filter
def test_connects_hidden_in_a_send_or_an_option_are_refused(tcp_port: int) -> None:
    """TCP Fast Open connects inside sendto/sendmsg, past the connect hook that some kernels'
    Landlock relies on; TCP_ULP "smc" turns a TCP socket into an SMC one whose connect Landlock
    does not judge."""
    found = results(HIDDEN_CONNECTS, filtered=True, port=tcp_port)
    assert found == dict.fromkeys(found, "EPERM")
    assert len(found) == 4


def fast_open_client() -> bool:
    try:
        return int(Path("/proc/sys/net/ipv4/tcp_fastopen").read_text()) & 1 == 1
    except (OSError, ValueError):
        return False


@needs_filter
@pytest.mark.skipif(not fast_open_client(), reason="TCP Fast Open's client side is off here")
def test_fast_open_connects_and_ulps_answer_without_the_filter(tcp_port: int) -> None:
    found = results(HIDDEN_CONNECTS, filtered=False, port=tcp_port)
    assert found["sendto fast open"] == "ok" and found["sendmsg fast open"] == "ok"
    # The kernel's own answers: MPTCP's ULP is internal (ENOTSUP), ENOENT names no such ULP.
    assert found["ulp mptcp"] in ("ENOTSUP", "ENOENT")
    assert found["ulp smc"] in ("ok", "ENOENT")


ORDINARY_SENDS = r"""
def talk():
    with socket.create_connection(("127.0.0.1", ARGS["port"]), timeout=30) as s:
        s.setsockopt(socket.SOL_TCP, socket.TCP_NODELAY, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        s.sendall(b"a")
        s.send(b"b", socket.MSG_NOSIGNAL)
        s.sendmsg([b"c"], [], socket.MSG_NOSIGNAL)
        s.sendto(b"d", socket.MSG_DONTWAIT, ("127.0.0.1", ARGS["port"]))
results["talk"] = attempt(talk)
"""


@needs_filter
def test_ordinary_sends_and_options_still_work(tcp_port: int) -> None:
    assert results(ORDINARY_SENDS, filtered=True, port=tcp_port) == {"talk": "ok"}


OTHER_FAMILIES = r"""
for family in ARGS["families"]:
    for type_ in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET, socket.SOCK_RAW):
        results[f"{family} {type_}"] = attempt(lambda: make(family, type_))
"""
# vsock, packet, XDP, RDS, TIPC, SMC, Bluetooth, CAN, KCM, QIPCRTR, MCTP, X25, and numbers
# no kernel has given a family yet.
REFUSED_FAMILIES = [40, 17, 44, 21, 30, 43, 31, 29, 41, 42, 45, 9, 46, 63]


@needs_filter
def test_families_that_reach_other_machines_or_the_host_are_refused() -> None:
    found = results(OTHER_FAMILIES, filtered=True, families=REFUSED_FAMILIES)
    assert found == dict.fromkeys(found, "EPERM")
    assert len(found) == 4 * len(REFUSED_FAMILIES)


@needs_filter
@pytest.mark.skipif(os.geteuid() != 0, reason="packet sockets need root")
def test_a_packet_socket_is_made_without_the_filter() -> None:
    found = results(OTHER_FAMILIES, filtered=False, families=[17])
    assert found[f"17 {socket.SOCK_RAW}"] == "ok"


IO_URING_ATTACK = r"""
params = ctypes.create_string_buffer(120)
def call(nr, *args):
    fd = libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) for a in args))
    if fd < 0:
        raise OSError(ctypes.get_errno(), str(nr))
    if nr == 425:
        os.close(fd)
results["setup"] = attempt(lambda: call(425, 8, ctypes.addressof(params)))
results["enter"] = attempt(lambda: call(426, -1, 0, 0, 0, 0, 0))
results["register"] = attempt(lambda: call(427, -1, 0, 0, 0))
"""


@needs_filter
def test_io_uring_is_refused_with_enosys() -> None:
    found = results(IO_URING_ATTACK, filtered=True)
    assert found == {"setup": "ENOSYS", "enter": "ENOSYS", "register": "ENOSYS"}


@needs_filter
def test_io_uring_answers_without_the_filter() -> None:
    found = results(IO_URING_ATTACK, filtered=False)
    assert found["enter"] == "EBADF"
    assert found["register"] in ("EBADF", "EINVAL")  # fd -1 is a "blind" register from 6.13
    if found["setup"] != "ok":
        pytest.skip(f"io_uring_setup is refused on this machine already ({found['setup']})")


X32_ATTACK = r"""
print("before", flush=True)
number = libc.syscall(ctypes.c_long(0x40000000 + 39))  # x32's getpid
print("after", number, ctypes.get_errno(), flush=True)
"""

I386_ATTACK = r"""
import mmap
code = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
code.write(bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3]))  # mov eax, 20 (getpid); int 0x80; ret
getpid32 = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(code)))
print("before", flush=True)
print("after", getpid32(), os.getpid(), flush=True)
"""

x86_64_only = pytest.mark.skipif(MACHINE != "x86_64", reason="x32 and int 0x80 are x86-64's")


@needs_filter
@x86_64_only
@pytest.mark.parametrize("attack", [X32_ATTACK, I386_ATTACK], ids=["x32", "i386"])
def test_a_call_of_another_numbering_kills_the_process(attack: str) -> None:
    """32-bit calls would reach `socketcall`, whose arguments no filter can read; x32 numbers
    would pass a filter that compares x86-64 numbers only."""
    done = child(attack, filtered=True)
    assert done.stdout == "before\n"
    assert done.returncode == -signal.SIGSYS


@needs_filter
@x86_64_only
@pytest.mark.parametrize("attack", [X32_ATTACK, I386_ATTACK], ids=["x32", "i386"])
def test_a_call_of_another_numbering_returns_without_the_filter(attack: str) -> None:
    done = child(attack, filtered=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("before\nafter ")


@needs_filter
def test_the_number_minus_one_is_left_to_the_kernel() -> None:
    body = r"""
results["-1"] = libc.syscall(ctypes.c_long(-1)), errno.errorcode[ctypes.get_errno()]
"""
    assert results(body, filtered=True) == {"-1": [-1, "ENOSYS"]}


@pytest.fixture
def readable_module() -> Iterator[Path]:
    """A copy of the module any user may read (the test's tmp_path, and the run's own temp
    folder, are root's alone): in the machine's temp folder, removed after."""
    folder = Path(tempfile.mkdtemp(prefix="mm-seccomp-", dir=temp_folder.MACHINES))
    try:
        folder.chmod(0o755)
        copy = folder / "seccomp.py"
        shutil.copyfile(MODULE, copy)
        copy.chmod(0o644)
        yield copy
    finally:
        shutil.rmtree(folder)


@needs_filter
@pytest.mark.skipif(os.geteuid() != 0, reason="runs a child as nobody: needs root")
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)")
def test_an_unprivileged_user_installs_it_too(readable_module: Path) -> None:
    """No new privileges makes the filter legal without CAP_SYS_ADMIN."""
    body = r"""
results["uid"] = os.getuid()
results["tcp"] = attempt(lambda: make(socket.AF_INET, socket.SOCK_STREAM))
results["unix"] = attempt(lambda: socket.socketpair()[0].close())
print(json.dumps(results))
"""
    nobody = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
    done = child(body, filtered=True, module=readable_module, prefix=nobody)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found == {"mm modules": [], "uid": 65534, "guard": "EPERM", "tcp": "ok", "unix": "ok"}


@needs_filter
def test_install_refuses_what_is_not_a_program() -> None:
    """The kernel's checker refuses a load beyond seccomp_data: install says so with the
    errno; bytes that are not whole instructions never reach the kernel."""
    body = r"""
import struct
past_the_end = struct.pack("=HBBI", 0x20, 0, 0, 64) + struct.pack("=HBBI", 0x06, 0, 0, 0x7FFF0000)
try:
    seccomp.install(past_the_end)
except OSError as e:
    results["bad"] = errno.errorcode[e.errno]
for name, program in (("empty", b""), ("ragged", past_the_end[:12])):
    try:
        seccomp.install(program)
    except ValueError:
        results[name] = "ValueError"
results["still open"] = attempt(lambda: make(socket.AF_INET, socket.SOCK_STREAM, 262))
"""
    found = results(body, filtered=False)
    assert found.pop("still open") != "EPERM", "a refused program left a filter behind"
    assert found == {"bad": "EINVAL", "empty": "ValueError", "ragged": "ValueError"}


# prctl's and seccomp's numbers, for the filters below that take one of them away.
PRCTL_SECCOMP = {"x86_64": (157, 317), "aarch64": (167, 277), "riscv64": (167, 277)}

TAKE_AWAY = r"""
import struct
def refusing(nr, errno_, arg0=None):
    "A filter refusing call `nr` (when its first argument is `arg0`, if given) with `errno_`."
    code = [(0x20, 0, 0, 0), (0x15, 0, 3, nr)]
    code += [(0x20, 0, 0, 16), (0x15, 0, 1, arg0)] if arg0 is not None else [(0x05, 0, 0, 0)] * 2
    code += [(0x06, 0, 0, 0x50000 | errno_), (0x06, 0, 0, 0x7FFF0000)]
    return b"".join(struct.pack("=HBBI", *op) for op in code)
seccomp.install(refusing(*ARGS["refuse"]))
seccomp.install(seccomp.network_filter())
status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines())
results["filters"] = status["Seccomp_filters"].strip()
results["mptcp"] = attempt(lambda: make(socket.AF_INET, socket.SOCK_STREAM, 262))
results["tcp"] = attempt(lambda: make(socket.AF_INET, socket.SOCK_STREAM))
"""


@needs_filter
def test_install_uses_the_seccomp_call() -> None:
    """seccomp(2) carries SECCOMP_FILTER_FLAG_SPEC_ALLOW (no forced speculation mitigations):
    with prctl(PR_SET_SECCOMP) refused, the filter still goes in."""
    prctl, _ = PRCTL_SECCOMP[MACHINE]
    found = results(TAKE_AWAY, filtered=False, refuse=[prctl, errno.EPERM, 22])
    assert found == {"filters": "2", "mptcp": "EPERM", "tcp": "ok"}


@needs_filter
def test_install_falls_back_to_prctl_without_the_seccomp_call() -> None:
    """A kernel without seccomp(2) (or without the flag) answers ENOSYS (EINVAL): prctl then."""
    _, seccomp_nr = PRCTL_SECCOMP[MACHINE]
    for answer in (errno.ENOSYS, errno.EINVAL):
        found = results(TAKE_AWAY, filtered=False, refuse=[seccomp_nr, answer])
        assert found == {"filters": "2", "mptcp": "EPERM", "tcp": "ok"}


# --- the rule, over many cases: an interpreter of the emitted BPF against a plain statement ---


def run_bpf(program: bytes, data: bytes) -> int:
    """The verdict of a classic-BPF seccomp program on one seccomp_data, for the subset the
    module emits; anything else (another opcode, a misaligned or out-of-range load, a jump past
    the end, a backward jump) is a failure, as the kernel's checker would refuse it."""
    assert len(program) % 8 == 0 and 0 < len(program) // 8 <= 4096
    code = [struct.unpack_from("=HBBI", program, at) for at in range(0, len(program), 8)]
    a = 0
    pc = 0
    while True:
        assert 0 <= pc < len(code), "ran off the end of the program"
        op, jt, jf, k = code[pc]
        if op == 0x20:  # ld [k]
            assert k % 4 == 0 and k + 4 <= len(data), f"load at {k}"
            a = int.from_bytes(data[k : k + 4], sys.byteorder)
            pc += 1
        elif op == 0x54:  # and #k
            a &= k
            pc += 1
        elif op == 0x05:  # ja +k
            pc += 1 + k
        elif op in (0x15, 0x35, 0x25, 0x45):  # jeq, jge, jgt, jset #k
            holds = {0x15: a == k, 0x35: a >= k, 0x25: a > k, 0x45: bool(a & k)}[op]
            pc += 1 + (jt if holds else jf)
        elif op == 0x06:  # ret #k
            return k
        else:
            raise AssertionError(f"opcode {op:#x} is outside the subset")


def seccomp_data(nr: int, arch: int, args: tuple[int, ...]) -> bytes:
    return struct.pack("=IIQ6Q", nr, arch, 0x401000, *args, *(0,) * (6 - len(args)))


def rule(machine: str, nr: int, arch: int, args: tuple[int, ...]) -> int:
    """The rule as a person states it (the module's docstring), in plain Python."""
    audit, socket_nr, socketpair_nr = NUMBERS[machine]
    if arch != audit:
        return KILL
    if machine == "x86_64" and nr >= 0x40000000 and nr != 0xFFFFFFFF:
        return KILL
    if nr in IO_URING:
        return ENOSYS
    sends = SENDS[machine]
    low = [value & 0xFFFFFFFF for value in (*args, 0, 0, 0, 0, 0, 0)]  # the kernel's ints
    if nr in (sends["sendto"], sends["sendmmsg"]):
        return EPERM if low[3] & MSG_FASTOPEN else ALLOW
    if nr == sends["sendmsg"]:
        return EPERM if low[2] & MSG_FASTOPEN else ALLOW
    if nr == sends["setsockopt"]:
        return EPERM if (low[1], low[2]) == (socket.SOL_TCP, TCP_ULP) else ALLOW
    if nr not in (socket_nr, socketpair_nr):
        return ALLOW
    family, kind, protocol = (value & 0xFFFFFFFF for value in args[:3])  # the kernel's ints
    if family in (socket.AF_INET, socket.AF_INET6):
        if kind & 0xF == socket.SOCK_DGRAM:
            return ALLOW
        if kind & 0xF == socket.SOCK_STREAM and protocol in (0, socket.IPPROTO_TCP):
            return ALLOW
        return EPERM
    return ALLOW if family in (socket.AF_UNIX, socket.AF_NETLINK, 38) else EPERM


def high_bits() -> st.SearchStrategy[int]:
    """Bits above the 32 the kernel reads, which an attacker may set to hide a value."""
    return st.sampled_from([0, 0, 0, 1 << 32, 0xFFFFFFFF << 32, 1 << 63])


@st.composite
def socket_args(draw: st.DrawFn) -> tuple[int, int, int]:
    """(family, type | flags, protocol), weighted to the values the rule turns on, with any
    number at all mixed in."""
    inet = [socket.AF_INET, socket.AF_INET6] * 4
    family = draw(
        st.sampled_from([*inet, socket.AF_UNIX, socket.AF_NETLINK, 38, 40, 17, 0])
        | st.sampled_from(inet)
        | st.integers(0, 47)
        | st.integers(0, 0xFFFFFFFF)
    )
    kind = draw(
        st.sampled_from([socket.SOCK_STREAM] * 3 + [socket.SOCK_DGRAM] * 2 + [socket.SOCK_RAW])
        | st.integers(0, 15)
        | st.integers(0, 0xFFFFFFFF)
    )
    kind |= draw(st.sampled_from([0, socket.SOCK_NONBLOCK, socket.SOCK_CLOEXEC, FLAGS]))
    protocol = draw(
        st.sampled_from([0, 0, 6, 6, 17, 1, 132, 256, 262, 255, 0x106, 0x10006])
        | st.integers(0, 0xFFFFFFFF)
    )
    return family | draw(high_bits()), kind | draw(high_bits()), protocol | draw(high_bits())


@settings(max_examples=1000)
@given(st.sampled_from(sorted(NUMBERS)), st.booleans(), socket_args())
def test_socket_calls_follow_the_rule(machine: str, pair: bool, args: tuple[int, ...]) -> None:
    audit, socket_nr, socketpair_nr = NUMBERS[machine]
    nr = socketpair_nr if pair else socket_nr
    program = seccomp.network_filter(machine)
    assert run_bpf(program, seccomp_data(nr, audit, args)) == rule(machine, nr, audit, args)


@settings(max_examples=1000)
@given(st.data())
def test_every_call_follows_the_rule(data: st.DataObject) -> None:
    """Any number, any architecture: the x32 range and foreign numberings, io_uring, and calls
    whose arguments look like a refused socket's but are not socket's."""
    machine = data.draw(st.sampled_from(sorted(NUMBERS)))
    audit, socket_nr, socketpair_nr = NUMBERS[machine]
    arch = data.draw(
        st.sampled_from([audit] * 6 + [AUDIT_I386, AUDIT_ARM, *(a for a, _, _ in NUMBERS.values())])
        | st.integers(0, 0xFFFFFFFF)
    )
    nr = data.draw(
        st.sampled_from([socket_nr, socketpair_nr, *IO_URING, 0, 1, 59, 41, 53, 198, 199, 102])
        | st.sampled_from([0x40000000 | socket_nr, 0x40000000, 0x3FFFFFFF, 0xFFFFFFFF])
        | st.sampled_from([0x80000000, 0xFFFFFFFE, 0x40000000 | 425])
        | st.integers(0, 0xFFFFFFFF)
    )
    args = data.draw(socket_args())
    program = seccomp.network_filter(machine)
    assert run_bpf(program, seccomp_data(nr, arch, args)) == rule(machine, nr, arch, args)


def test_every_edge_follows_the_rule() -> None:
    """The numbers where the rule changes, each once, for every architecture: drawn at random
    above, they come up a few times in a thousand examples, not surely."""
    for machine, (audit, socket_nr, socketpair_nr) in NUMBERS.items():
        program = seccomp.network_filter(machine)
        sends = SENDS[machine].values()
        numbers = [socket_nr, socketpair_nr, *sends, *IO_URING, 0x3FFFFFFF, 0x40000000]
        numbers += [0x40000000 | socket_nr, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF]
        arches = [audit, AUDIT_I386, AUDIT_ARM, *(a for a, _, _ in NUMBERS.values()), 0]
        args = (socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP, MSG_FASTOPEN)
        for nr in numbers:
            for arch in arches:
                verdict = run_bpf(program, seccomp_data(nr, arch, args))
                assert verdict == rule(machine, nr, arch, args), (machine, hex(nr), hex(arch))


def weighted(common: list[int]) -> st.SearchStrategy[int]:
    """Mostly one of `common` (the values the rule turns on), else any 32-bit number; with
    high bits or not."""
    values = st.sampled_from(common) | st.sampled_from(common) | st.integers(0, 0xFFFFFFFF)
    return st.builds(int.__or__, values, high_bits())


FLAG_VALUES = [0, MSG_FASTOPEN, MSG_FASTOPEN | socket.MSG_NOSIGNAL, socket.MSG_NOSIGNAL]


@st.composite
def sends(draw: st.DrawFn) -> tuple[str, str, tuple[int, ...]]:
    """(machine, call, its six arguments), the flags, level and option where that call has
    them drawn from the values that matter."""
    machine = draw(st.sampled_from(sorted(NUMBERS)))
    call = draw(st.sampled_from(["sendto", "sendmsg", "sendmmsg", "setsockopt"]))
    args = list(draw(st.tuples(*[weighted([0, 6, TCP_ULP, MSG_FASTOPEN])] * 6)))
    if call == "setsockopt":
        args[1] = draw(weighted([socket.SOL_TCP, socket.SOL_TCP, socket.SOL_SOCKET, 0, 41]))
        args[2] = draw(weighted([TCP_ULP, TCP_ULP, socket.TCP_NODELAY, 30, 23]))
    else:
        args[2 if call == "sendmsg" else 3] = draw(weighted(FLAG_VALUES))
    return machine, call, tuple(args)


@settings(max_examples=1000)
@given(sends())
def test_sends_and_setsockopt_follow_the_rule(case: tuple[str, str, tuple[int, ...]]) -> None:
    """A send with MSG_FASTOPEN connects without connect(), where Landlock of some kernels
    does not look; TCP_ULP "smc" turns a TCP socket into an SMC one Landlock lets connect."""
    machine, call, args = case
    audit = NUMBERS[machine][0]
    nr = SENDS[machine][call]
    program = seccomp.network_filter(machine)
    assert run_bpf(program, seccomp_data(nr, audit, args)) == rule(machine, nr, audit, args)


def test_the_interpreter_and_the_rule_tell_a_refusal() -> None:
    """The property above is not vacuous: the rule and the interpreter both see an MPTCP
    socket refused, and an allow-everything program is caught."""
    mptcp = (socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
    data = seccomp_data(41, 0xC000003E, mptcp)
    assert rule("x86_64", 41, 0xC000003E, mptcp) == EPERM
    assert run_bpf(seccomp.network_filter("x86_64"), data) == EPERM
    assert run_bpf(struct.pack("=HBBI", 0x06, 0, 0, ALLOW), data) == ALLOW


def test_an_architecture_without_numbers_is_said_unavailable() -> None:
    with pytest.raises(
        seccomp.FilterUnavailable, match=r"no program for this architecture \(s390x\)"
    ):
        seccomp.network_filter("s390x")
    with pytest.raises(OSError):
        seccomp.network_filter("i686")


# --- a handful of the same cases on the real kernel: EPERM exactly where the rule refuses ---

KERNEL_CASES = [
    (socket.AF_INET, socket.SOCK_STREAM, 0),
    (socket.AF_INET, socket.SOCK_STREAM | FLAGS, socket.IPPROTO_TCP),
    (socket.AF_INET6, socket.SOCK_STREAM, IPPROTO_MPTCP),
    (socket.AF_INET6, socket.SOCK_STREAM | socket.SOCK_NONBLOCK, IPPROTO_MPTCP),
    (socket.AF_INET, socket.SOCK_DGRAM, 0),
    (socket.AF_INET6, socket.SOCK_DGRAM | FLAGS, socket.IPPROTO_UDP),
    (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
    (socket.AF_INET, socket.SOCK_SEQPACKET, 0),
    (socket.AF_INET, (1 << 32) | socket.SOCK_STREAM, IPPROTO_SCTP),
    ((1 << 40) | socket.AF_INET6, socket.SOCK_STREAM, IPPROTO_SMC),
    (socket.AF_UNIX, socket.SOCK_STREAM, 0),
    (socket.AF_NETLINK, socket.SOCK_DGRAM, 0),
    (40, socket.SOCK_STREAM, 0),
    (17, socket.SOCK_DGRAM, 0),
]


@needs_filter
def test_the_kernel_refuses_exactly_what_the_rule_refuses() -> None:
    """socket and socketpair alike (socketpair of AF_INET is EOPNOTSUPP from the kernel, of
    AF_UNIX it works: only the filter answers EPERM)."""
    body = r"""
for family, type_, protocol in ARGS["cases"]:
    key = f"{family} {type_} {protocol}"
    results["socket " + key] = attempt(lambda: raw_socket(family, type_, protocol))
    results["socketpair " + key] = attempt(lambda: raw_socketpair(family, type_, protocol))
"""
    found = results(body, filtered=True, cases=KERNEL_CASES)
    audit, socket_nr, socketpair_nr = NUMBERS[MACHINE]
    for call, nr in (("socket", socket_nr), ("socketpair", socketpair_nr)):
        for case in KERNEL_CASES:
            refused = rule(MACHINE, nr, audit, case) == EPERM
            seen = found[" ".join(map(str, (call, *case)))]
            assert (seen == "EPERM") == refused, (call, case, seen)
    assert sum(value == "EPERM" for value in found.values()) == 2 * 8
