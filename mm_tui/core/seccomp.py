"""A seccomp filter that leaves confined commands plain TCP as their only stream protocol over IP,
so that Landlock's TCP rules (`sandboxNetwork: false`) cannot be gone around.

Landlock (ABI 4) refuses TCP bind and connect, and nothing else: an MPTCP socket
(`socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP)`) connects and listens as freely as TCP did, and so
would SCTP, SMC (`IPPROTO_SMC`), vsock to the host of a virtual machine, or a socket made by
io_uring without the socket() call. This filter, installed in the same processes as Landlock,
takes those away.

Refused (EPERM, "Operation not permitted", unless said otherwise):

- `socket`/`socketpair` of family AF_INET or AF_INET6, unless the type (its low 4 bits:
  SOCK_NONBLOCK and SOCK_CLOEXEC are or'ed above them) is SOCK_STREAM with protocol 0 or
  IPPROTO_TCP (plain TCP, which Landlock judges), or SOCK_DGRAM with any protocol (UDP, which DNS
  needs, and ICMP "ping" sockets). So MPTCP (262), SCTP (132), SMC (256) and every other stream
  protocol, SOCK_SEQPACKET, SOCK_RDM, SOCK_DCCP and the obsolete SOCK_PACKET are refused.
  SOCK_RAW is refused too: it needs CAP_NET_RAW, which an ordinary user does not have (so it
  costs them nothing), while a command run by root has it and could write TCP segments by hand;
- `socket`/`socketpair` of every family but AF_UNIX, AF_INET, AF_INET6, AF_NETLINK (the kernel's
  own configuration channel: `ip`, glibc's getaddrinfo, Go and Node list the machine's addresses
  with it) and AF_ALG (the kernel's hashes and ciphers, which reach no other machine). The rest
  are transports to other machines or to the host that Landlock does not see, and no ordinary
  command of a coding session needs them: AF_PACKET and AF_XDP (whole frames, root only),
  AF_VSOCK (streams to the hypervisor's host), AF_RDS, AF_TIPC, AF_SMC, AF_KCM, AF_BLUETOOTH,
  AF_CAN, AF_QIPCRTR, AF_MCTP, AF_PPPOX, AF_X25, AF_AX25 and the other old ones, and any family
  a future kernel adds. An allow list, so that a new family is refused until it is looked at;
- `setsockopt(fd, SOL_TCP, TCP_ULP, ...)`: the "smc" upper-layer protocol turns a TCP socket
  into an SMC one after socket() (where the kernel has SMC), whose connect Landlock does not
  judge. The name is behind a pointer no filter can read, so the option is refused whatever it
  names: kernel TLS ("tls") goes with it, and programs that try it fall back to TLS of their own;
- `sendto`, `sendmsg` and `sendmmsg` with MSG_FASTOPEN: TCP Fast Open connects inside the send,
  past the connect hook Landlock judges, and was reported to go around Landlock (Linux 6.18,
  here, refuses it by itself; older kernels may not). A send without the flag, and the connect()
  of a TCP_FASTOPEN_CONNECT socket, which Landlock sees, are untouched;
- io_uring (`io_uring_setup`, `io_uring_enter`, `io_uring_register`) with ENOSYS: its
  IORING_OP_SOCKET makes a socket without the socket() call, where no filter can see its
  arguments. ENOSYS is what a kernel built without io_uring answers, so every program that uses
  it already has the way back to ordinary calls (libuv, for one) and takes it;
- a system call of another architecture's numbering: an x86-64 process can still make 32-bit
  calls (`int 0x80`, where sockets are made through `socketcall` with arguments in memory no
  filter can read) and, on kernels with x32, calls numbered from 0x40000000. Those kill the
  process (SIGSYS, "Bad system call") rather than fail with an errno: a 32-bit program made to
  fail at every call would misbehave in ways nobody could read, while a kill says what happened.
  The number -1 (0xffffffff), which some programs use to probe, is left to the kernel (ENOSYS),
  as libseccomp does.

Stays open: plain TCP sockets (made freely; Landlock decides whether they connect or listen),
UDP and ICMP datagrams (DNS; a command can still send data out over UDP to any address), Unix
sockets (a command that can reach a daemon's socket, Docker's or an SSH agent's, can still ask it
for anything, connections included), netlink, and every other system call. Only the low 32 bits
of each argument are read: the kernel takes `int` arguments, so the filter reads what the kernel
will use and high bits cannot hide a value.

Cost: having any seccomp filter sends every system call of the process through the kernel's
slower entry path; after that, where the kernel keeps seccomp's cache of calls allowed whatever
their arguments (Linux 5.11 on x86-64), every call but socket, socketpair, setsockopt, the
three sends and io_uring's is allowed from the cache without running this program (41
instructions); a TCP socket() runs 14 of them, a send 10 or 11. Measured here (x86-64, Linux
6.18, a C loop of a million calls, medians of 15 alternating runs; without a filter / with one
that allows everything / with this one): getppid() 176 / 224 / 237 ns, a one-byte send and
recv on a Unix datagram pair 2.04 / 2.12 / 2.34 us, socket()+close() 6.0 / 6.1 / 6.2 us. So
some 50 ns a call for having a filter at all, and some 200 ns more on a send. `install`
asks the kernel not to force its speculation mitigations on the filtered process (see there),
which older kernels would do.

Where: x86-64, aarch64 and riscv64 (little-endian, 64-bit Python only). Elsewhere
`network_filter` raises `FilterUnavailable` (an OSError). `install` applies to the calling
thread and the processes it starts from then on (a filter is never removed). The program is the
raw array of `struct sock_filter` (8 bytes each, native byte order), so another process can
install the same bytes with its own few lines.

Standard library only (ctypes for install), and no import of the rest of mm: a small process that
imports nothing of mm loads this file by its path.
"""

from __future__ import annotations

import errno
import platform
import struct
import sys

__all__ = ["FilterUnavailable", "install", "network_filter"]


class FilterUnavailable(OSError):
    """No filter is built for this architecture; the message says which, for a person."""


# Classic BPF opcodes (linux/bpf_common.h).
LD_W_ABS = 0x00 | 0x00 | 0x20  # BPF_LD | BPF_W | BPF_ABS
ALU_AND_K = 0x04 | 0x50 | 0x00  # BPF_ALU | BPF_AND | BPF_K
JMP_JA = 0x05 | 0x00  # BPF_JMP | BPF_JA
JMP_JEQ_K = 0x05 | 0x10 | 0x00  # BPF_JMP | BPF_JEQ | BPF_K
JMP_JGE_K = 0x05 | 0x30 | 0x00  # BPF_JMP | BPF_JGE | BPF_K
JMP_JSET_K = 0x05 | 0x40 | 0x00  # BPF_JMP | BPF_JSET | BPF_K
RET_K = 0x06 | 0x00  # BPF_RET | BPF_K

# seccomp's verdicts (linux/seccomp.h).
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000

# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6].
_NR = 0
_ARCH = 4
_LOW = 0 if sys.byteorder == "little" else 4


def _arg(index: int) -> int:
    """The offset of argument `index`'s low 32 bits (the kernel reads the `int` there)."""
    return 16 + 8 * index + _LOW


AF_UNIX = 1
AF_INET = 2
AF_INET6 = 10
AF_NETLINK = 16
AF_ALG = 38
SOCK_STREAM = 1
SOCK_DGRAM = 2
SOCK_TYPE_MASK = 0xF
IPPROTO_TCP = 6
SOL_TCP = 6
TCP_ULP = 31
MSG_FASTOPEN = 0x20000000

ALLOWED_FAMILIES = (AF_UNIX, AF_NETLINK, AF_ALG)
X32_SYSCALL_BIT = 0x40000000


class _Arch:
    """What the program needs of an architecture: its audit number and its call numbers."""

    def __init__(self, audit: int, numbers: dict[str, int], x32: bool = False) -> None:
        self.audit = audit
        self.socket = numbers["socket"]
        self.socketpair = numbers["socketpair"]
        self.setsockopt = numbers["setsockopt"]
        self.sendto = numbers["sendto"]
        self.sendmsg = numbers["sendmsg"]
        self.sendmmsg = numbers["sendmmsg"]
        self.io_uring = (425, 426, 427)  # setup, enter, register: the same everywhere
        self.seccomp = numbers["seccomp"]
        self.x32 = x32


_X86_64 = {
    "socket": 41,
    "socketpair": 53,
    "setsockopt": 54,
    "sendto": 44,
    "sendmsg": 46,
    "sendmmsg": 307,
    "seccomp": 317,
}
# The generic numbering (asm-generic/unistd.h), which aarch64 and riscv64 share.
_GENERIC = {
    "socket": 198,
    "socketpair": 199,
    "setsockopt": 208,
    "sendto": 206,
    "sendmsg": 211,
    "sendmmsg": 269,
    "seccomp": 277,
}
ARCHES: dict[str, _Arch] = {
    "x86_64": _Arch(0xC000003E, _X86_64, x32=True),
    "aarch64": _Arch(0xC00000B7, _GENERIC),
    "riscv64": _Arch(0xC00000F3, _GENERIC),
}


def _native_machine() -> str:
    """The architecture this process's calls are numbered in (a 32-bit Python on a 64-bit
    kernel reports the kernel's machine, but its calls are the 32-bit ones: none of ours)."""
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    if struct.calcsize("P") != 8 or sys.byteorder != "little":
        return f"{machine} ({struct.calcsize('P') * 8}-bit, {sys.byteorder}-endian)"
    return machine


class _Program:
    """A tiny assembler: instructions with jumps to labels, resolved to relative offsets."""

    def __init__(self) -> None:
        self.code: list[tuple[int, int | str, int | str, int | str]] = []
        self.labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def op(self, code: int, k: int | str = 0) -> None:
        """An instruction without a condition; `k` of an unconditional jump may be a label."""
        self.code.append((code, 0, 0, k))

    def jump(self, code: int, k: int, yes: str | int = 0, no: str | int = 0) -> None:
        """A conditional jump: to label `yes` when it holds, else `no` (0: the next one)."""
        self.code.append((code, yes, no, k))

    def assemble(self) -> bytes:
        """The instructions as `struct sock_filter`s, each label turned into its offset."""
        out = bytearray()
        for at, (code, yes, no, k) in enumerate(self.code):
            jt, jf, k = (self._offset(at, target) for target in (yes, no, k))
            out += struct.pack("=HBBI", code, jt, jf, k)
        return bytes(out)

    def _offset(self, at: int, target: str | int) -> int:
        if isinstance(target, int):
            return target
        offset = self.labels[target] - at - 1
        if not 0 <= offset <= 255:  # far enough for this program; BPF_JA alone reaches further
            raise ValueError(f"seccomp filter: jump to {target} out of reach ({offset})")
        return offset


def network_filter(machine: str | None = None) -> bytes:
    """The filter for `machine` (`platform.machine()`'s name; default: this process's), as the
    raw `struct sock_filter` array `install` takes. Raises `FilterUnavailable` for an
    architecture it has no numbers for."""
    name = machine or _native_machine()
    arch = ARCHES.get(name)
    if arch is None:
        raise FilterUnavailable(
            errno.ENOTSUP,
            f"seccomp filter: no program for this architecture ({name}); "
            f"built for {', '.join(ARCHES)}",
        )
    p = _Program()
    p.op(LD_W_ABS, _ARCH)
    p.jump(JMP_JEQ_K, arch.audit, no="kill")
    p.op(LD_W_ABS, _NR)
    if arch.x32:
        p.jump(JMP_JGE_K, X32_SYSCALL_BIT, no="calls")
        p.jump(JMP_JEQ_K, 0xFFFFFFFF, yes="allow", no="kill")
    p.label("calls")
    p.jump(JMP_JEQ_K, arch.socket, yes="socket")
    p.jump(JMP_JEQ_K, arch.socketpair, yes="socket")
    p.jump(JMP_JEQ_K, arch.sendto, yes="flags in 3")
    p.jump(JMP_JEQ_K, arch.sendmsg, yes="flags in 2")
    p.jump(JMP_JEQ_K, arch.sendmmsg, yes="flags in 3")
    p.jump(JMP_JEQ_K, arch.setsockopt, yes="setsockopt")
    for number in arch.io_uring:
        p.jump(JMP_JEQ_K, number, yes="enosys")
    p.op(RET_K, RET_ALLOW)

    for label, index in (("flags in 3", 3), ("flags in 2", 2)):
        p.label(label)
        p.op(LD_W_ABS, _arg(index))
        p.jump(JMP_JSET_K, MSG_FASTOPEN, yes="eperm", no="allow")

    p.label("setsockopt")
    p.op(LD_W_ABS, _arg(1))
    p.jump(JMP_JEQ_K, SOL_TCP, no="allow")
    p.op(LD_W_ABS, _arg(2))
    p.jump(JMP_JEQ_K, TCP_ULP, yes="eperm", no="allow")

    p.label("socket")
    p.op(LD_W_ABS, _arg(0))
    p.jump(JMP_JEQ_K, AF_INET, yes="inet")
    p.jump(JMP_JEQ_K, AF_INET6, yes="inet")
    for family in ALLOWED_FAMILIES:
        p.jump(JMP_JEQ_K, family, yes="allow")
    p.op(JMP_JA, "eperm")

    p.label("inet")
    p.op(LD_W_ABS, _arg(1))
    p.op(ALU_AND_K, SOCK_TYPE_MASK)
    p.jump(JMP_JEQ_K, SOCK_DGRAM, yes="allow")
    p.jump(JMP_JEQ_K, SOCK_STREAM, no="eperm")
    p.op(LD_W_ABS, _arg(2))
    p.jump(JMP_JEQ_K, 0, yes="allow")
    p.jump(JMP_JEQ_K, IPPROTO_TCP, yes="allow", no="eperm")

    p.label("allow")
    p.op(RET_K, RET_ALLOW)
    p.label("eperm")
    p.op(RET_K, RET_ERRNO | errno.EPERM)
    p.label("enosys")
    p.op(RET_K, RET_ERRNO | errno.ENOSYS)
    p.label("kill")
    p.op(RET_K, RET_KILL_PROCESS)
    return p.assemble()


_PR_SET_SECCOMP = 22
_PR_SET_NO_NEW_PRIVS = 38
_SECCOMP_MODE_FILTER = 2  # prctl's mode
_SECCOMP_SET_MODE_FILTER = 1  # seccomp(2)'s operation
_SECCOMP_FILTER_FLAG_SPEC_ALLOW = 4
_BPF_MAXINSNS = 4096


def install(program: bytes) -> None:
    """Install `program` (a `struct sock_filter` array) on the calling thread, after
    PR_SET_NO_NEW_PRIVS, which makes it legal without CAP_SYS_ADMIN. What the thread starts
    from then on inherits it; it cannot be removed. Raises OSError with the errno on failure,
    ValueError for bytes that are not a whole number of instructions.

    Through seccomp(2) with SECCOMP_FILTER_FLAG_SPEC_ALLOW where the kernel has it (Linux
    4.17): without it, kernels before 5.16 force the speculative-store-bypass mitigation (and
    STIBP) on every filtered process, which slows compute-heavy commands (a build, a test run)
    to protect the command's memory from the command itself. Else prctl."""
    count, rest = divmod(len(program), 8)
    if rest or not 0 < count <= _BPF_MAXINSNS:
        raise ValueError(f"seccomp filter: {len(program)} bytes is not 1 to 4096 instructions")
    import ctypes

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.restype = ctypes.c_int
    zero = ctypes.c_ulong(0)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = Fprog(count, ctypes.cast(buffer, ctypes.c_void_p))
    # prctl is variadic: every argument is passed with its C type, the unused ones as 0 (the
    # kernel refuses PR_SET_NO_NEW_PRIVS with EINVAL when they are not).
    if libc.prctl(ctypes.c_int(_PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1), zero, zero, zero) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_NO_NEW_PRIVS): {errno.errorcode.get(err, err)}")
    arch = ARCHES.get(_native_machine())
    if arch is not None:
        libc.syscall.restype = ctypes.c_long
        operation = ctypes.c_ulong(_SECCOMP_SET_MODE_FILTER)
        flags = ctypes.c_ulong(_SECCOMP_FILTER_FLAG_SPEC_ALLOW)
        if libc.syscall(ctypes.c_long(arch.seccomp), operation, flags, ctypes.byref(fprog)) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL):  # EINVAL: a kernel without the flag
            raise OSError(err, f"seccomp(SET_MODE_FILTER): {errno.errorcode.get(err, err)}")
    mode = ctypes.c_ulong(_SECCOMP_MODE_FILTER)
    if libc.prctl(ctypes.c_int(_PR_SET_SECCOMP), mode, ctypes.byref(fprog), zero, zero) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_SECCOMP): {errno.errorcode.get(err, err)}")
