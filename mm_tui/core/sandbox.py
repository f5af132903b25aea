"""The sandbox of the commands the model runs (bash, and the language servers started for the
project): Linux Landlock, through ctypes, applied to those processes only (mm is never confined).

What a confined command may do:

- **write** only in the project folder (the working folder, and the git work tree around it
  unless that is the home folder or above it), the system temp folder (`$TMPDIR` of the
  command's environment when it names a folder, else `/tmp`), `/dev/shm`, `~/.cache`
  (`$XDG_CACHE_HOME`: package managers and language servers keep their caches there), the
  folders of the `sandboxWrite` setting, and the devices of `DEVICES` (`/dev/null`, `/dev/zero`,
  `/dev/full`, `/dev/random`, `/dev/urandom`: the only ones it may send ioctls to, IOCTL_DEV).
  Not in mm's state folder (`$XDG_STATE_HOME/mm`: history, sessions, the record of trusted
  configs; what a command wrote there mm would trust later), which stays read-only even inside
  a write folder, nor in the sessions folder: mm writes its own files itself. No device node may
  be made anywhere (as root, a block device made in the project would open the disk);
- **read and run** everything else, except the deny list: `~/.ssh`, `~/.aws`, `~/.gnupg`, mm's
  configuration folder (`~/.config/mm`, which holds api keys), the credential stores
  (`~/.local/share/keyrings`, `~/.password-store`, `~/.netrc`, `~/.git-credentials`,
  `~/.docker/config.json`, `~/.kube`, `~/.config/gcloud`, `~/.azure`, `~/.config/gh`,
  `~/.pypirc`), the paths of the `sandboxDeny` setting, the terminals (`TERMINALS` and the
  virtual consoles: through one a command could push keystrokes into mm's terminal with TIOCSTI,
  as root, or read what the person types) and the disks and memory (block devices, `RAW`: as
  root, reading the disk reads every secret on it). The names in a denied folder can be listed
  (its parent must be listable), not its files read;
- **connect or listen over TCP** unless `sandboxNetwork: false` (Landlock ABI 4, Linux 6.7).
  UDP (DNS included) and Unix sockets are not covered by Landlock (a command that can reach a
  Docker daemon's socket can still ask it for anything);
- **signal** only processes inside the sandbox (ABI 6, Linux 6.12): the commands started from
  the same ruleset's launcher share its domain, so a command can stop a job an earlier one left
  running, but not mm nor the person's other programs (`pkill python` would stop mm). A rebuilt
  ruleset is a new domain: jobs of the old one are out of reach. The launcher, inside, stops a
  command's processes at its timeout (mm asks it to).

The same policy binds the file tools (read_file, write_file, edit_file, read_skill,
fetch_content's output) through mm's own check, `core/file_access.py` (`judge` is also what
`Confinement.explain` asks): it needs no kernel support and holds whenever the `sandbox` setting
is not `off`, in `auto` on a kernel without Landlock too.

Not protected: the project itself, `.git/hooks` and `.git/config` included (they run when the
person uses git): Landlock grants a right on a folder for everything beneath it, so no folder
inside a writable one can be kept read-only without taking the right to make entries in the
project's own top folder. Nor metadata, for which Landlock has no right: a command can
`chmod 777 ~/.ssh`, change times and extended attributes outside the project, as root also
`chown` and `chattr +i`. A secret created after a command started is not covered by its
ruleset (a Landlock rule needs an existing file; the next command's ruleset is built again, the
folders' times having changed).

Not confined: MCP servers. The person configured them (the model did not write them), and the
SDK's `stdio_client` starts the process itself, with no way to hand it one started here:
confining it would take a `preexec_fn` (see below) or a stdio transport of mm's own in place of
the SDK's.

How: Landlock only grants, so "read everywhere but" is built by descending from `/` along the
path to each denied item and granting every sibling on the way (every entry of `~` but `.ssh`,
every entry of `~/.config` but `mm`, ...); the write folders likewise around the denied and the
read-only items below them (`plan`). Every access right the running kernel knows is handled, so
what is not granted is refused (TRUNCATE from ABI 3, IOCTL_DEV from ABI 5). A symbolic link
among the siblings gets no rule of its own: Landlock judges the file it leads to, which has the
rules the policy gives its real place (a link `proj/x -> ~/.bashrc` beside a denied `proj/.env`
leaves ~/.bashrc read-only). A denied path's real path is denied too. A folder on the way to a
kept item gets only what cannot reach that item: a right on a folder holds for all beneath it,
and the rights to make or remove an entry are checked on the folder the entry is in, beneath
too. So it may be listed, and, when no kept FOLDER lies beneath it, make entries (files,
folders, links; REFER to move a file in from a place that gives it more rights): the project's
top folder above a denied `.env` can still get new files. It may never write, truncate or
remove: `.env` can be neither read, written, removed nor replaced (a rename over it needs the
right to remove it), and a file made at the top is written from the next command on (whose
ruleset knows it), not by the command that made it. Above a kept folder (`~/.ssh` when the
project is the home folder) only listing: with the right to make entries a command could plant
`~/.ssh/authorized_keys`.

The ruleset is built in mm (one rule per sibling: well under a millisecond for a usual home
folder) and kept, keyed by what it depends on: the policy and the modification times of the
folders that were descended (a new entry in `~` makes a new ruleset). mm itself is never
confined, nor any thread of it: commands and language servers start from the ruleset's launcher
process (`core/launcher.py`), which confines itself with the ruleset before it starts anything
(`PR_SET_NO_NEW_PRIVS`, then `landlock_restrict_self`); a child inherits that. A rebuilt ruleset
retires its launcher (no new call; its jobs run on until mm exits). Files mm opened for the
child (the bash output file, a language server's pipes) are passed to the launcher and keep
working: Landlock checks at open. No new privileges means a set-user-id program (sudo) gains none.

A launcher also enters PID and mount namespaces of its own (as root with CAP_SYS_ADMIN, as a
plain user inside a user namespace of its own: `launcher_process._enter_namespaces`): mm is
not in its /proc, and the denied items that exist (`covers`: files and folders, not links nor
devices) are covered by mounts the commands cannot undo, so `plan` takes nothing from the
folders above them (`sandboxDeny: [secrets]` leaves the project writable). Where that fails (a
container without CAP_SYS_ADMIN, a system that refuses user namespaces to plain users) the
ruleset is built again without covers and the launcher started without namespaces;
`MM_SANDBOX_NAMESPACES=0` asks for that.

`sandbox` setting: `auto` (the default) confines when Landlock works and otherwise runs commands
unconfined, said once at start-up (`landlock_abi.startup_warning`); `strict` refuses to run a command that
cannot be confined (the text says why); `off` confines nothing.

A refused operation comes back as the command's own error (Landlock answers EACCES for a file or
a TCP port, EPERM for a signal); `Confinement.explain` adds one line when the output shows such a
refusal that the sandbox may have made, saying so and how to allow it.

For tests and for seeing the fallback: `MM_SANDBOX_FAKE_ABI=0` in mm's environment makes mm
behave as on a kernel without Landlock; `MM_SANDBOX_FAKE_ABI=N` caps the ABI at N.

macOS is not built: `sandbox-exec` with a generated profile is the next step there; elsewhere
than Linux, `auto` runs unconfined with the warning and `strict` refuses.

Standard library only (ctypes), like the rest of `core/`.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import stat
import sys
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mm_tui.core.frozen import frozen, mutable
from mm_tui.core.landlock_abi import (
    FAKE_ABI_VARIABLE as FAKE_ABI_VARIABLE,  # the sandbox's, kept here too
)
from mm_tui.core.landlock_abi import SYS_CREATE_RULESET as _SYS_CREATE_RULESET
from mm_tui.core.landlock_abi import landlock_abi as landlock_abi
from mm_tui.core.landlock_abi import libc as _libc
from mm_tui.core.launcher import (
    STAGE_NAMESPACES,
    USE_LAUNCHER,
    LaunchedProcess,
    LauncherFailed,
    LauncherGone,
    LauncherProcess,
    launch,
    launch_direct,
    launch_sent,
    seccomp_filter,
)
from mm_tui.core.launcher_process import add_rule
from mm_tui.core.paths import shown_path, user_config_dir

MODES = ("auto", "off", "strict")
NAMESPACES_VARIABLE = "MM_SANDBOX_NAMESPACES"
"""`0` in mm's environment: no namespaces for the commands, Landlock alone."""

# --- Landlock's interface (include/uapi/linux/landlock.h) ----------------------------------------

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5

NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_SIGNAL = 1 << 1  # ABI 6

FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # what a file's rule may hold
READ = EXECUTE | READ_FILE | READ_DIR
WRITE = (1 << 16) - 1 & ~(MAKE_CHAR | MAKE_BLOCK)  # everything but device nodes
DEVICE = READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV


def handled_fs(abi: int) -> int:
    """Every file-system right the ABI knows: those not granted are refused."""
    if abi >= 5:
        return (1 << 16) - 1
    if abi >= 3:
        return (1 << 15) - 1
    if abi == 2:
        return (1 << 14) - 1
    return (1 << 13) - 1


# --- What is allowed -----------------------------------------------------------------------------

DENIED_IN_HOME = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".local/share/keyrings",
    ".password-store",
    ".netrc",
    ".git-credentials",
    ".docker/config.json",
    ".kube",
    ".config/gcloud",
    ".azure",
    ".config/gh",
    ".pypirc",
)
"""The deny list, under the home folder; mm's configuration folder is added (it may be moved by
XDG_CONFIG_HOME)."""

DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/urandom", "/dev/random")
"""The devices commands may open for writing, and the only ones they may send ioctls to."""
TERMINALS = ("/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/console")
"""Denied like secrets (no read, no write): through a terminal a command could type into mm's
own (TIOCSTI, as root) or read what the person types. The virtual consoles (`/dev/tty1`, ...)
are added as found."""
_CONSOLE = re.compile(r"tty[0-9]+|vcs[au]?[0-9]*")  # the virtual consoles, and their screens
RAW = ("/dev/mem", "/dev/kmem", "/dev/port")
"""Memory as root reads it; denied like the block devices (disks), found as they are."""
SHARED_MEMORY = "/dev/shm"


@frozen
class SandboxConfig:
    """The settings the sandbox reads (`Settings.sandbox_config` makes one, config/settings.py)."""

    mode: str = "auto"  # auto | off | strict
    network: bool = True
    deny: tuple[str, ...] = ()  # more paths nobody may read (`~` allowed)
    write: tuple[str, ...] = ()  # more folders commands may write in (`~` allowed)


@frozen
class Policy:
    """What one confined command may do, and the file tools, in absolute paths: `write`, the
    existing folders (and files) where all but device nodes is allowed; `deny`, what nobody may
    read or write (those that do not exist yet too: the file tools judge them; `plan` leaves
    them out); `readonly`, what may be read, never written (mm's state folder). Each as given
    and, when it exists, as its real path."""

    write: tuple[str, ...]
    deny: tuple[str, ...]
    network: bool
    home: str
    readonly: tuple[str, ...] = ()


def _expand(path: str, home: str, base: Path) -> str:
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    return os.path.normpath(os.path.join(base, path))


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def project_folders(cwd: Path, home: str) -> list[str]:
    """The working folder, and the git work tree around it (where `git commit` writes), unless
    that tree is the home folder or holds it (a home folder under git)."""
    folder = os.path.abspath(cwd)
    found = [folder]
    for parent in Path(folder).parents:
        if os.path.lexists(parent / ".git"):
            top = str(parent)
            if not _under(home, top):
                found.append(top)
            break
    return found


def state_folder(env: Mapping[str, str], home: str) -> str:
    """mm's state folder (`$XDG_STATE_HOME/mm`, else `~/.local/state/mm`): line history,
    sessions, the record of trusted project configs. What a command wrote there mm would trust
    later, so neither commands nor the file tools may write in it."""
    state_home = env.get("XDG_STATE_HOME", "")
    state_home = state_home if os.path.isabs(state_home) else os.path.join(home, ".local/state")
    return os.path.join(state_home, "mm")


def terminals() -> list[str]:
    """The devices denied like secrets: the terminals present (`TERMINALS` and the virtual
    consoles of /dev), and the disks and memory (`RAW`, and every block device of /dev and
    /dev/mapper): as root, a command reading a disk would read every secret on it."""
    found = [t for t in (*TERMINALS, *RAW) if os.path.lexists(t)]
    for folder in ("/dev", "/dev/mapper"):
        with contextlib.suppress(OSError):
            for entry in sorted(os.scandir(folder), key=lambda e: e.name):
                if entry.path in found:
                    continue
                with contextlib.suppress(OSError):
                    block = stat.S_ISBLK(entry.stat(follow_symlinks=False).st_mode)
                    if block or (folder == "/dev" and _CONSOLE.fullmatch(entry.name)):
                        found.append(entry.path)
    return found


def _real(path: str) -> str:
    """`os.path.realpath` that does not raise: a link it may not read (`/proc/1/root` of a
    process of another user) stays as it is, as a path that leads nowhere would."""
    try:
        return os.path.realpath(path)
    except OSError:
        return os.path.abspath(path)


def _with_real(paths: Iterable[str]) -> list[str]:
    """Each path normalized, followed by its real path when that differs (an existing one
    reached through a link)."""
    found: list[str] = []
    for path in paths:
        path = os.path.normpath(path)
        found.append(path)
        if os.path.lexists(path):
            real = _real(path)
            if real != path:
                found.append(real)
    return found


_POLICY_ENV = ("HOME", "TMPDIR", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME")
_policies: dict[tuple[Any, ...], tuple[Policy, tuple[int, ...], tuple[str, ...]]] = {}


def make_policy(config: SandboxConfig, project: Path, env: Mapping[str, str]) -> Policy:
    """The policy of a command started in `project` with the environment `env` (its HOME,
    TMPDIR and XDG folders are the command's), and of the file tools working there.

    mm's state folder and the sessions folder are not in it: mm writes its own files itself,
    unconfined, and a command has no business there (a session it could write would be
    replayed to the model as what happened). A `sessionsDir` the person chose inside the project
    is writable as the rest of the project is.

    Kept while the folders it looked into stay the same (their modification times: an entry
    made, removed, renamed or replaced by a link changes them): working it out resolves every
    denied path and lists /dev, about 2 ms, and every bash command and file tool call asks for
    it; the check that it still holds is a stat of each of those folders."""
    key = (config, os.path.abspath(project), *(env.get(name, "") for name in _POLICY_ENV))
    kept = _policies.get(key)
    if kept is not None and kept[1] == _folder_stamp(kept[2]):
        return kept[0]
    policy, looked = _make_policy(config, project, env)
    folders = tuple(sorted(_ancestors(looked) | {"/dev", "/dev/mapper"}))
    if len(_policies) >= _KEEP:
        _policies.clear()
    _policies[key] = (policy, _folder_stamp(folders), folders)
    return policy


def _folder_stamp(folders: Iterable[str]) -> tuple[int, ...]:
    """The modification times of `folders` (0 for one that is not there)."""
    stamp = []
    for folder in folders:
        try:
            stamp.append(os.stat(folder).st_mtime_ns)
        except OSError:
            stamp.append(0)
    return tuple(stamp)


def _make_policy(
    config: SandboxConfig, project: Path, env: Mapping[str, str]
) -> tuple[Policy, list[str]]:
    home = env.get("HOME") or os.path.expanduser("~")
    home = os.path.abspath(home)
    homepath = Path(home)
    write = project_folders(project, home)
    tmp = env.get("TMPDIR", "")
    write.append(tmp if os.path.isabs(tmp) and os.path.isdir(tmp) else "/tmp")
    write.append(SHARED_MEMORY)
    cache = env.get("XDG_CACHE_HOME", "")
    write.append(cache if os.path.isabs(cache) else os.path.join(home, ".cache"))
    write += [_expand(p, home, Path(project)) for p in config.write]
    deny = [os.path.join(home, p) for p in DENIED_IN_HOME]
    deny.append(str(user_config_dir(homepath, env)))
    deny += [_expand(p, home, Path(project)) for p in config.deny]
    deny += terminals()
    writable = _with_real(p for p in write if os.path.exists(p))
    policy = Policy(
        write=tuple(dict.fromkeys(writable)),
        deny=tuple(dict.fromkeys(_with_real(deny))),
        network=config.network,
        home=home,
        readonly=tuple(dict.fromkeys(_with_real([state_folder(env, home)]))),
    )
    # every path looked at, as given and as it really is: a folder above one of them that
    # changes may change the policy
    looked = [*write, *deny, *policy.write, *policy.deny, *policy.readonly]
    looked += [str(p / ".git") for p in Path(os.path.abspath(project)).parents]
    return policy, looked


SECRET = "secret"
PROCESS = "process"
TERMINAL = "terminal"
_PROCESS = re.compile(r"/proc/(?:[0-9]+|self|thread-self)(?:/|$)")
"""A process's own files: its environment and memory hold secrets (mm's keys are in mm's
environment). A confined command cannot reach those of processes outside the sandbox (Landlock
scopes ptrace); the file tools run in mm, so they are refused them all."""
STATE = "state"
OUTSIDE = "outside"


def judge(policy: Policy, given: str, real: str, *, write: bool) -> str | None:
    """The one check of a path against the policy, for the file tools (`core/file_access.py`)
    and bash's refusal line (`Confinement.blocked`). Why the policy refuses `given` (absolute,
    as given) whose real path is `real`: SECRET or TERMINAL (either lies in a denied item),
    PROCESS (a process's own files, `/proc/<pid>`), for a write also STATE (either lies in mm's
    state folder) or OUTSIDE (`real` is not in the write set); None when it allows it."""
    given, real = os.path.normpath(given), os.path.normpath(real)
    for item in policy.deny:
        if _under(given, item) or _under(real, item):
            return TERMINAL if _is_terminal(item) else SECRET
    if _PROCESS.match(given) or _PROCESS.match(real):
        return PROCESS
    if not write:
        return None
    if any(_under(given, item) or _under(real, item) for item in policy.readonly):
        return STATE
    if not any(_under(real, folder) for folder in policy.write):
        return OUTSIDE
    return None


def _is_terminal(item: str) -> bool:
    """A denied device (a terminal, a disk): `judge` says TERMINAL, not SECRET, of those."""
    return item.startswith("/dev/")


ENTRY_RIGHTS = MAKE_REG | MAKE_DIR | MAKE_SYM | MAKE_SOCK | MAKE_FIFO | REFER
"""The rights a folder above a kept item may have beyond listing, when that item is a file."""


def _ancestors(paths: Iterable[str]) -> set[str]:
    found: set[str] = set()
    for path in paths:
        parent = os.path.dirname(path)
        while parent not in found:
            found.add(parent)
            if parent == "/":
                break
            parent = os.path.dirname(parent)
    return found


def plan(policy: Policy, covered: Iterable[str] = ()) -> dict[str, int]:
    """The rules, path -> rights, that make the policy: the whole tree readable but the denied
    items, the write folders writable but the denied and read-only items under them, the
    devices of `DEVICES`.

    Landlock only grants, and a right on a folder holds for everything beneath it; a right to
    make or remove an entry is checked on the folder the entry is in, and holds in its
    subfolders too. So a folder on the way to a kept item (denied, or read-only) gets, of the
    rights of a write folder, only those that cannot reach that item: listing, and when no kept
    FOLDER lies beneath it, making entries (files, folders, links, and moving files in from a
    place that gives them more rights: REFER refuses a move that would give a file more rights).
    Never writing or truncating files (the kept file below would get them), never removing an
    entry (`rm .env`, or replacing it by renaming another file over it). A symbolic link among
    the siblings gets no rule: Landlock judges the file it leads to, which has rules of its own
    where the policy grants any (a link `proj/x -> ~/.bashrc` must not make ~/.bashrc writable).

    `covered`: denied items the launcher hides under a mount of its own (`covers`): the folders
    above them need not give anything up."""
    denied = {p for p in policy.deny if os.path.lexists(p)} - set(covered)
    kept = denied | {p for p in policy.readonly if os.path.lexists(p)}
    to_denied = _ancestors(denied)
    to_kept = _ancestors(kept)
    above_folder = _ancestors(p for p in kept if os.path.isdir(p))
    rules: dict[str, int] = {}

    def add(path: str, rights: int) -> None:
        rules[path] = rules.get(path, 0) | rights

    def grant(path: str, rights: int, partial: set[str], skip: set[str]) -> None:
        if path not in partial:
            add(path, rights)
            return
        entry = 0 if path in above_folder else ENTRY_RIGHTS
        add(path, rights & (READ_DIR | entry))
        try:
            entries = list(os.scandir(path))
        except OSError:
            return
        for item in entries:
            child = os.path.join(path, item.name)
            if child in skip:
                continue
            try:
                link = item.is_symlink()
            except OSError:
                continue
            if not link:
                grant(child, rights, partial, skip)

    grant("/", READ, to_denied, denied)
    # By real path: a write folder reached through a link is judged where it really is.
    for path in dict.fromkeys(_real(p) for p in policy.write):
        if not any(_under(path, k) for k in kept):  # a write folder inside a kept item: none
            grant(path, WRITE, to_kept, kept)
    for device in DEVICES:
        if os.path.exists(device) and device not in denied:
            add(device, DEVICE)
    return rules


# --- The kernel ---------------------------------------------------------------------------------


def covers(policy: Policy) -> list[str]:
    """The denied items a launcher in namespaces of its own hides, each under an empty,
    read-only file or folder: those that exist, by their real path, but links (Landlock judges
    where one leads) and device nodes (Landlock refuses them, and /dev/pts changes all the
    time)."""
    found = []
    for path in policy.deny:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if _under(path, "/dev") or _real(path) != path:
            continue
        if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
            found.append(path)
    return found


_namespaces_failed = ""
"""Why a launcher could not enter namespaces of its own, once one could not: the next ones are
not asked to."""


def namespaces_wanted() -> bool:
    """Whether to start confined launchers in PID and mount namespaces of their own (a plain
    user's in a user namespace too), unless one failed already, the system refuses user
    namespaces to plain users, or `MM_SANDBOX_NAMESPACES=0`."""
    return (
        sys.platform == "linux"
        and not _namespaces_failed
        and os.environ.get(NAMESPACES_VARIABLE, "1") != "0"
        and (os.geteuid() == 0 or user_namespaces_allowed())
    )


@functools.cache
def user_namespaces_allowed() -> bool:
    """What the system's switches say of user namespaces for plain users: none allowed at all,
    Debian's and Ubuntu's own switches, Ubuntu's AppArmor rule. Spares a launcher started in
    vain where they say no; where they do not say, trying tells (and fails over to Landlock
    alone). Read once: every bash call asks (`ruleset_for`), and the switches are the
    machine's, set before mm started."""
    refusals = (
        ("/proc/sys/user/max_user_namespaces", "0"),
        ("/proc/sys/kernel/unprivileged_userns_clone", "0"),
        ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"),
    )
    for path, refused in refusals:
        try:
            with open(path) as f:
                if f.read().strip() == refused:
                    return False
        except OSError:
            continue
    return True


class SandboxUnavailable(Exception):
    """The sandbox cannot be set up here; the message says why, for a person."""


class Ruleset:
    """A Landlock ruleset built in mm, its descriptor kept open for the children to apply."""

    def __init__(self, abi: int, policy: Policy, hide: list[str] | None = None) -> None:
        """`hide`: the items the launcher covers in namespaces of its own (`covers`); None: no
        namespaces, Landlock alone."""
        self.abi = abi
        self.policy = policy
        self.network = policy.network
        self.hide = hide
        self._launcher: LauncherProcess | None = None
        self._launcher_lock = threading.Lock()
        self.fd = -1
        self.fd = self._build(plan(policy, hide or ()))

    def _build(self, rules: Mapping[str, int]) -> int:
        """A new ruleset in the kernel with `rules`; its descriptor."""
        import ctypes

        class Attr(ctypes.Structure):
            _fields_ = [
                ("handled_access_fs", ctypes.c_uint64),
                ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64),
            ]

        libc = _libc()
        abi = self.abi
        fs = handled_fs(abi)
        attr = Attr(fs, 0, 0)
        size = 8
        if abi >= 4:
            size = 16
            if not self.network:
                attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP  # and no rule: none
        if abi >= 6:
            size = 24
            attr.scoped = SCOPE_SIGNAL
        fd = libc.syscall(
            ctypes.c_long(_SYS_CREATE_RULESET),
            ctypes.byref(attr),
            ctypes.c_size_t(size),
            ctypes.c_uint32(0),
        )
        if fd < 0:
            err = ctypes.get_errno()
            raise SandboxUnavailable(f"landlock_create_ruleset failed: {os.strerror(err)}")
        self.rules = len(rules)
        try:
            for path, rights in rules.items():
                self._add(libc, int(fd), path, rights & fs)
        except BaseException:
            os.close(int(fd))
            raise
        return int(fd)

    def _add(self, libc: Any, fd: int, path: str, rights: int) -> None:
        try:
            target = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return  # gone since it was listed: nothing to grant
        try:
            if not stat.S_ISDIR(os.fstat(target).st_mode):
                rights &= FILE_RIGHTS
            if not rights:
                return
            err = add_rule(libc, fd, target, rights)
            if err:
                raise SandboxUnavailable(f"landlock_add_rule {path}: {os.strerror(err)}")
        finally:
            os.close(target)

    def launcher(self) -> LauncherProcess:
        """The process that starts this ruleset's children, confined (started on first need,
        and again when the one before died). Raises `LauncherFailed` when it cannot confine
        itself, OSError(ESTALE) when this ruleset was replaced meanwhile."""
        with self._launcher_lock:
            if self.fd < 0:
                raise _stale()
            if self._launcher is None or not self._launcher.usable():
                self._launcher = self._start()
            return self._launcher

    def _start(self) -> LauncherProcess:
        global _namespaces_failed
        seccomp = seccomp_filter(self.network)
        if self.hide is not None:
            try:
                proc = READ & handled_fs(self.abi)
                return LauncherProcess(self.fd, seccomp, self.hide, proc)
            except LauncherFailed as exc:
                if exc.stage != STAGE_NAMESPACES:
                    raise
                # No namespaces here (a container without CAP_SYS_ADMIN, a kernel without
                # them): Landlock alone, with the rules that do not count on the covers.
                _namespaces_failed = str(exc)
                fd = self._build(plan(self.policy))
                os.close(self.fd)
                self.fd, self.hide = fd, None
        return LauncherProcess(self.fd, seccomp)

    def close(self) -> None:
        """Replaced: the launcher takes no new call (its running jobs stay until mm exits)."""
        with self._launcher_lock:
            if self._launcher is not None:
                self._launcher.retire()
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1


def _stale() -> OSError:
    return OSError(errno.ESTALE, "the sandbox was rebuilt meanwhile: run the command again")


_plain: LauncherProcess | None = None


def plain_launcher() -> LauncherProcess:
    """The launcher process of unconfined commands (`sandbox: off`, or no Landlock here): the
    same process as a confined one but for Landlock, so that these commands also die with mm
    and never run from a thread of mm."""
    global _plain
    with _lock:
        if _plain is None or not _plain.usable():
            _plain = LauncherProcess()
        return _plain


_lock = threading.Lock()
_rulesets: dict[tuple[Any, ...], Ruleset] = {}
_KEEP = 8  # rulesets kept (one per project and setting, in practice one or two)


def _stamp(policy: Policy) -> tuple[int, ...]:
    """The modification times of the folders the plan lists: a new entry there changes it."""
    folders = _ancestors((*policy.deny, *policy.readonly))
    stamp = []
    for folder in sorted(folders):
        try:
            stamp.append(os.stat(folder).st_mtime_ns)
        except OSError:
            stamp.append(0)
    return tuple(stamp)


def ruleset_for(policy: Policy, abi: int) -> Ruleset:
    """The ruleset of this policy, built once and kept while the folders it lists stay the same."""
    key = (policy, abi, namespaces_wanted(), _stamp(policy))
    with _lock:
        ruleset = _rulesets.get(key)
        if ruleset is not None:
            return ruleset
        ruleset = Ruleset(abi, policy, covers(policy) if namespaces_wanted() else None)
        stale = [k for k in _rulesets if k[:3] == key[:3]]
        if len(_rulesets) - len(stale) >= _KEEP:
            stale = list(_rulesets)
        for old in stale:
            # Safe to close: its launcher confined itself when it started, and a job it has
            # not run yet fails (ESTALE) rather than start unconfined.
            _rulesets.pop(old).close()
        _rulesets[key] = ruleset
        return ruleset


# --- For the tools ------------------------------------------------------------------------------

REFUSALS = (
    "permission denied",
    "operation not permitted",
    "[errno 13]",
    "[errno 1]",
    "eacces",
    "eperm",
)
"""How a command's output shows a refusal Landlock makes (EACCES for a file or a port, EPERM for
a signal), lower-cased. Not "Read-only file system": Landlock never answers EROFS."""
COVERED = ("no such file or directory", "read-only file system", "device or resource busy")
"""How a command's output shows that it met a denied item a launcher in namespaces of its own
covered (`covers`): what a denied folder held is not there, the cover cannot be written nor
removed. Counted only when the line names a path the sandbox blocks."""


@functools.cache
def _path_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """How a line of output names a path: quoted, absolute, and relative with a folder in it
    (`.ssh/id_rsa`: for the covered items' errors, which name no path the sandbox blocks
    otherwise). Compiled when first needed: 1 ms of start-up for output that refuses something."""
    return (
        re.compile(r"""['"`‘“]([^'"`’”\n]+)['"`’”]"""),
        re.compile(r"""(?<![\w.~-])(~?/[^\s'"`’”:,;()]*)"""),
        re.compile(r"""(?<![\w.~/-])([\w.-]+(?:/[\w.-]+)+)"""),
    )


def config_file(env: Mapping[str, str] | None = None) -> str:
    """Where the person's config.yaml is, as they read it."""
    return shown_path(user_config_dir(environ=env) / "config.yaml")


@mutable
class Confinement:
    """How to start one command (a bash command, a language server): `start`, from the
    ruleset's launcher process when confined (`ruleset`; None: from the unconfined launcher).
    `refused`: strict mode could not confine, the command must not run, and this text says
    why."""

    ruleset: Ruleset | None = None
    refused: str | None = None
    why: str = ""  # for `refused`: why the sandbox cannot be set up
    policy: Policy | None = None
    cwd: str = ""

    async def start(self, argv: list[str], **popen: Any) -> LaunchedProcess:
        """Start `argv` with Popen-like `stdin`, `stdout`, `stderr`, `cwd`, `env` from the
        launcher process (confined when this is), as the leader of a group of its own.
        Raises OSError as Popen would; `LauncherGone` when the launcher died meanwhile."""
        if not USE_LAUNCHER:  # not Linux: nothing is confined, and no launcher is built
            return await launch_direct(argv, **popen)
        return await launch(self._launcher_for_call(), argv, **popen)

    def start_sent(self, argv: list[str], **popen: Any) -> LaunchedProcess | None:
        """`start` without waiting for the pid (a failure to start comes out of `wait()`), and
        not a coroutine: nothing can cancel it between the request and the process's record.
        None where commands are not started from a launcher (then use `start`)."""
        if not USE_LAUNCHER:
            return None
        return launch_sent(self._launcher_for_call(), argv, **popen)

    def _launcher_for_call(self) -> LauncherProcess:
        return self._launcher() if self.ruleset is not None else plain_launcher()

    def _launcher(self) -> LauncherProcess:
        """The ruleset's launcher; when the ruleset was rebuilt since this confinement was made
        (a folder it lists changed: a new terminal in /dev/pts, a new entry at the project's
        top, perhaps made by a call running beside this one), the new ruleset's."""
        assert self.ruleset is not None and self.policy is not None
        for _ in range(3):
            try:
                return self.ruleset.launcher()
            except OSError as exc:
                if exc.errno != errno.ESTALE:
                    raise
                self.ruleset = ruleset_for(self.policy, self.ruleset.abi)
        return self.ruleset.launcher()

    @property
    def confined(self) -> bool:
        return self.ruleset is not None

    def blocked(self, path: str) -> bool:
        """Whether the sandbox refuses writing `path` or reading it: the file tools' judgement
        (`judge`), on the path as given and its real path."""
        policy = self.policy
        if policy is None:
            return False
        path = _expand(path, policy.home, Path(self.cwd or "/"))
        return judge(policy, path, _real(path), write=True) is not None

    def explain(self, output: str) -> str | None:
        """The line that tells the model the sandbox refused something, when the output shows
        a refusal it may have made: a line that says permission was denied and names a path the
        sandbox blocks, or names no path at all (a port, a signal)."""
        if self.policy is None or not self.confined:
            return None
        lowered = output.lower()
        words = REFUSALS + COVERED
        if not any(word in lowered for word in words):
            return None
        for line in output.splitlines():
            low = line.lower()
            refused = any(word in low for word in REFUSALS)
            if not refused and not any(word in low for word in COVERED):
                continue
            quoted, absolute, relative = _path_patterns()
            paths = [m.group(1) for m in quoted.finditer(line) if not m.group(1).isspace()]
            paths = [p for p in paths if " " not in p]
            paths += [m.group(1) for m in absolute.finditer(line)]
            named = paths if refused else paths + [m.group(1) for m in relative.finditer(line)]
            if (refused and not paths) or any(self.blocked(p) for p in named[:16]):
                return self.line()
        return None

    def line(self) -> str:
        policy = self.policy
        network = "" if policy is None or policy.network else ", have no network"
        return (
            "[sandbox: refused by mm's sandbox — commands write only in the project, the temp "
            "folder, ~/.cache and sandboxWrite, cannot read ~/.ssh, mm's configuration or other "
            f"secrets{network}, cannot open the terminal and cannot signal processes they did "
            "not start. To allow it, the "
            "person can run the command themselves, add the folder to sandboxWrite, or set "
            f"sandbox: off in {config_file()}]"
        )


def confine(config: SandboxConfig, project: Path, env: Mapping[str, str]) -> Confinement:
    """How to start a command in `project` with the environment `env`, under `config`."""
    if config.mode == "off":
        return Confinement()
    abi, why = landlock_abi()
    if 1 <= abi < 4 and not config.network and config.mode == "strict":
        why = (
            f"this kernel's Landlock (ABI {abi}) cannot turn the network off (ABI 4, Linux 6.7, "
            "is needed)"
        )
        return Confinement(refused=refusal(why), why=why)
    try:
        if abi < 1:
            raise SandboxUnavailable(why)
        policy = make_policy(config, project, env)
        ruleset = ruleset_for(policy, abi)
        try:
            ruleset.launcher()  # started now: a failure to confine is said here
        except (LauncherFailed, LauncherGone) as exc:
            # Landlock works here, so `auto` promised confinement: the command is not run
            # unconfined behind the person's back (strict says it its own way)
            why = f"the launcher of the commands could not confine itself: {exc.strerror or exc}"
            if config.mode == "strict":
                return Confinement(refused=refusal(why), why=why)
            return Confinement(refused=not_confined(why), why=why)
    except (OSError, SandboxUnavailable) as exc:
        if config.mode == "strict":
            return Confinement(refused=refusal(str(exc)), why=str(exc))
        return Confinement()  # auto: unconfined, as start-up said
    return Confinement(ruleset=ruleset, policy=policy, cwd=os.path.abspath(project))


def refusal(why: str) -> str:
    """What a command gets in strict mode when the sandbox cannot be set up."""
    return (
        f"[error: the sandbox cannot be set up: {why} — with sandbox: strict the command is not "
        f"run. Ask the person to run it, or to set sandbox: auto (commands then run unconfined "
        f"here) in {config_file()}]"
    )


def not_confined(why: str) -> str:
    """What a command gets in auto mode when Landlock works but its launcher failed."""
    return (
        f"[error: the sandbox cannot be set up: {why} — the command is not run. Ask the person "
        f"to run it, or to set sandbox: off in {config_file()}]"
    )
