"""The sandbox as a security boundary around mm itself, attacked from the commands it runs.

The commands the model runs start from a launcher process (core/launcher.py), confined before
it starts anything; no thread of mm shares their Landlock domain. Here a hostile command goes
for mm the way an attacker would, through the real `mm -p` (and `mm -acp`) on the scripted
model, as root and as a plain user (tests/support/plain_user.py): it signals every thread of
mm, ptraces each, reads mm's memory, environment and descriptors through /proc, looks for the
api key (given both in `MM_API_KEY` and in the configuration file) in all it got, and reads
the launcher's environment. Then what outlives what: mm killed (`kill -9`) while a command runs
with a `setsid` child, a command's timeout, a background job; and the terminal.

Each test waits for conditions with generous limits (the machine is shared): nothing is timed.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import termios
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.env import clean_env
from support.plain_user import User, user
from support.processes import all_pids, cmdline, launchers, stat_fields
from support.scripted_server import Reply, ScriptedServer, call
from support.waiting import wait_until

from mm_tui.config import Settings
from mm_tui.core import sandbox
from mm_tui.tools.args import BashArgs
from mm_tui.tools.base import ToolContext
from mm_tui.tools.bash import BashTool

ABI, WHY = sandbox.landlock_abi({})
needs_landlock = pytest.mark.skipif(ABI < 1, reason=f"no Landlock here: {WHY}")
needs_signal_scope = pytest.mark.skipif(
    ABI < 6, reason=f"Landlock ABI {ABI} cannot scope signals (ABI 6, Linux 6.12)"
)
ATTACK = Path(__file__).parents[1] / "support" / "attack_mm.py"
ENV_KEY = "mmtestkey-environment" + secrets.token_hex(8)
CONFIG_KEY = "mmtestkey-configured" + secrets.token_hex(8)
USERS = ["me", "plain"]
NO_NAMESPACES = {sandbox.NAMESPACES_VARIABLE: "0"}


def needs_namespaces(place: Place) -> None:
    """Skips, saying why, where the place's user gets no namespaces for its launcher."""
    if place.who.uid is None and os.geteuid() == 0:
        return
    if not sandbox.user_namespaces_allowed():
        pytest.skip("this system refuses user namespaces to plain users: Landlock alone")


class Place:
    """A home folder (mm's configuration with a key), a project and a temp folder, owned by
    the user who runs mm, under /tmp (pytest's folders are closed to a plain user)."""

    def __init__(self, who: User) -> None:
        self.who = who
        self.base = who.folder("boundary")
        self.home, self.project, self.tmp = (self.base / n for n in ("home", "project", "tmp"))
        config = self.home / ".config" / "mm"
        config.mkdir(parents=True)
        (config / "config.yaml").write_text(f"apiKey: {CONFIG_KEY}\n")
        self.project.mkdir()
        self.tmp.mkdir()
        shutil.copy(ATTACK, self.project / "attack.py")
        who.own(self.base)

    def env(self, server: ScriptedServer, **more: str) -> dict[str, str]:
        env = clean_env(
            self.home,
            {
                "MM_BASE_URL": server.base_url,
                "MM_MODEL": "m",
                "MM_API_KEY": ENV_KEY,
                "TMPDIR": str(self.tmp),
            },
            **more,
        )
        return self.who.env(env)

    def mm(
        self,
        server: ScriptedServer,
        *args: str,
        env_more: dict[str, str] | None = None,
        **popen: object,
    ) -> subprocess.Popen[str]:
        """`mm ARGS...` in the project as the place's user, its output captured."""
        argv = self.who.argv(self.who.python, "-m", "mm_tui.cli", *args)
        return subprocess.Popen(  # type: ignore[call-overload]
            argv,
            cwd=self.project,
            env=self.env(server, **(env_more or {})),
            text=True,
            **{"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **popen},
        )


@pytest.fixture(params=USERS)
def place(request: pytest.FixtureRequest) -> Iterator[Place]:
    made = Place(user(request.param))
    yield made
    shutil.rmtree(made.base, ignore_errors=True)


def marker() -> str:
    """A duration no other test's `sleep` has: its processes are found by their command line."""
    return f"300.{secrets.randbelow(10**6):06d}"


def sleeping(duration: str) -> list[int]:
    return [p for p in all_pids() if cmdline(p) == ["sleep", duration] and alive(p)]


def alive(pid: int) -> bool:
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def kill_sleepers(*durations: str) -> None:
    """Cleanup after a failure: the sleeps a broken sandbox let outlive mm."""
    for duration in durations:
        for pid in sleeping(duration):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


# --- a command against mm ----------------------------------------------------------------------


@needs_landlock
@needs_signal_scope
@pytest.mark.parametrize("confinement", ["namespaces", "landlock"])
def test_a_command_cannot_signal_ptrace_or_read_mm(place: Place, confinement: str) -> None:
    """The launcher enters PID and mount namespaces of its own (a plain user's in a user
    namespace first): mm is not there to be named. Without them (where they are refused, as in
    a container without CAP_SYS_ADMIN, or a system that refuses user namespaces to plain users:
    `MM_SANDBOX_NAMESPACES=0` does the same) Landlock and mm's own guard hold."""
    namespaced = confinement == "namespaces"
    if namespaced:
        needs_namespaces(place)
    python = place.who.python
    with ScriptedServer(
        Reply(tool_calls=[call("bash", {"command": f"{python} attack.py mm.pid"})]),
        Reply("still here"),
    ) as server:
        proc = place.mm(server, "-p", "go", env_more={} if namespaced else NO_NAMESPACES)
        # the attack knows mm's pid, as an attacker who tries them all would
        (place.project / "mm.pid").write_text(str(proc.pid))
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, f"mm died: {proc.returncode}\n{err}"
        assert "still here" in out  # mm answered after the attack
        report = server.requests[1].messages[-1]["content"]
    lines = report.splitlines()
    assert any(line.startswith("REFUSED ptrace seize") for line in lines), report
    allowed = [line for line in lines if line.startswith(("ALLOWED", "LEAKED"))]
    if namespaced:
        assert "mm processes seen: 0" in report, report
    elif place.who.uid is None and os.geteuid() == 0:
        # without namespaces, root opens what only asks to read (mm's environment, its
        # descriptors' list) even of a process that is not dumpable and without CAP_SYS_PTRACE:
        # what it finds there holds no key (asserted below; launcher.guard_mm)
        readable = re.compile(r"ALLOWED ((task \d+ )?environ|fd list /proc/\d+(/task/\d+)?)$")
        allowed = [line for line in allowed if not readable.match(line)]
    assert allowed == [], report
    tried = " ".join(
        line.split(":")[0] for line in lines if line.startswith(("REFUSED", "ALLOWED"))
    )
    for what in (" environ", " mem", "ptrace seize", "fd list", "kill"):
        assert what in tried, f"{what} was not tried:\n{report}"  # the attack ran whole
    if not namespaced:
        assert "open /proc" in tried, report  # mm's descriptors were there to try
    assert f"REFUSED kill {proc.pid}" in report  # mm's main thread among the killed
    assert ENV_KEY not in report and CONFIG_KEY not in report
    assert "mmtestkey-" not in report
    assert "launcher environ: 0 bytes" in report  # the launcher holds no secret


@needs_landlock
def test_where_namespaces_are_refused_landlock_alone_confines(tmp_path: Path) -> None:
    """Root without CAP_SYS_ADMIN (as in a container that took it away): the launcher cannot
    make its namespaces, and mm goes on with Landlock alone and the rules that do not count on
    covers: the denied folder is refused, and the project's top folder above it only listed."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv, to take CAP_SYS_ADMIN away")
    place = Place(user("me"))
    try:
        secrets_folder = place.project / "secrets"
        secrets_folder.mkdir()
        (secrets_folder / "key.pem").write_text(f"{CONFIG_KEY}\n")
        command = "echo parent=$PPID; cat secrets/key.pem; echo x > top.txt"
        with ScriptedServer(
            Reply(tool_calls=[call("bash", {"command": command})]), Reply("done")
        ) as server:
            env = place.env(server, MM_SANDBOX_DENY="secrets")
            argv = ["setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin", "--"]
            proc = subprocess.run(
                [*argv, sys.executable, "-m", "mm_tui.cli", "-p", "go"],
                cwd=place.project,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert proc.returncode == 0, proc.stderr
            told = server.requests[1].messages[-1]["content"]
        parent = int(told.split("parent=")[1].split()[0])
        assert parent != 1, told  # no PID namespace: the launcher is the shell's parent
        assert "cat: secrets/key.pem: Permission denied" in told, told
        assert CONFIG_KEY not in told
        assert "top.txt: Permission denied" in told, told
        assert not (place.project / "top.txt").exists()
    finally:
        shutil.rmtree(place.base, ignore_errors=True)


@needs_landlock
def test_the_launcher_holds_no_secret_nor_terminal(place: Place) -> None:
    """Seen from outside: the launcher's environment is empty, it has no controlling terminal
    (while mm has one), and no descriptor but /dev/null, its socket and its own pipe."""
    duration = marker()
    master, slave = os.openpty()
    reader = threading.Thread(target=_drain, args=(master,), daemon=True)
    reader.start()
    try:
        with ScriptedServer(
            Reply(
                tool_calls=[
                    call(
                        "bash",
                        {"command": "exec 3</dev/tty && echo opened-tty || echo no-tty"},
                    )
                ]
            ),
            Reply(tool_calls=[call("bash", {"command": f"sleep {duration}"})]),
            Reply("done"),
        ) as server:
            proc = place.mm(
                server,
                "-p",
                "go",
                stdin=slave,
                stdout=slave,
                stderr=slave,
                start_new_session=True,
                preexec_fn=_take_terminal,
            )
            try:
                assert wait_until(lambda: sleeping(duration), 60), "the command never ran"
                assert stat_fields(proc.pid)[4] != "0"  # mm has the terminal
                (launcher,) = launchers(proc.pid)
                fields = stat_fields(launcher)
                assert fields is not None
                assert fields[4] == "0", "the launcher has a controlling terminal"
                assert fields[2] == str(launcher)  # a group of its own: no Ctrl-C of mm's
                status = Path(f"/proc/{launcher}/status").read_text()
                assert "NoNewPrivs:\t1" in status
                keeper = int(fields[1])  # in namespaces of its own, the launcher's keeper
                for process in {launcher, keeper} - {proc.pid}:
                    assert Path(f"/proc/{process}/environ").read_bytes() == b""
                    targets = [os.readlink(f) for f in Path(f"/proc/{process}/fd").iterdir()]
                    assert not [t for t in targets if t.startswith(("/dev/pts", "/dev/tty"))]
                    assert not [t for t in targets if t.startswith("socket:")] or (
                        process == launcher
                    )  # the keeper holds no socket to mm
                    assert [os.readlink(f"/proc/{process}/fd/{n}") for n in (0, 1, 2)] == [
                        "/dev/null"
                    ] * 3
                told = server.requests[1].messages[-1]["content"]
                assert "no-tty" in told and "opened-tty" not in told
            finally:
                proc.kill()
                proc.wait(30)
    finally:
        os.close(slave)
        kill_sleepers(duration)


def _take_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _drain(fd: int) -> None:
    while True:
        try:
            if not os.read(fd, 65536):
                return
        except OSError:
            return


# --- what outlives what --------------------------------------------------------------------------


@needs_landlock
def test_killing_mm_p_kills_its_commands_setsid_ones_too(place: Place) -> None:
    group, alone = marker(), marker()
    command = f"setsid sleep {alone} & sleep {group}"
    with ScriptedServer(Reply(tool_calls=[call("bash", {"command": command})])) as server:
        proc = place.mm(server, "-p", "go")
        try:
            assert wait_until(lambda: sleeping(group) and sleeping(alone), 60), "never ran"
            proc.kill()  # SIGKILL: mm has no say
            proc.communicate(timeout=30)
            assert wait_until(lambda: not sleeping(group) and not sleeping(alone), 30), (
                "commands outlived mm"
            )
        finally:
            proc.kill()
            kill_sleepers(group, alone)


@needs_landlock
def test_killing_mm_acp_kills_its_commands_setsid_ones_too(place: Place) -> None:
    group, alone = marker(), marker()
    command = f"setsid sleep {alone} & sleep {group}"
    with ScriptedServer(Reply(tool_calls=[call("bash", {"command": command})])) as server:
        proc = place.mm(server, "-acp", stdin=subprocess.PIPE)
        assert proc.stdin is not None
        try:
            messages = [
                ("initialize", {"protocolVersion": 1}),
                ("session/new", {"cwd": str(place.project), "mcpServers": []}),
            ]
            for n, (method, params) in enumerate(messages):
                _send(proc, n, method, params)
                _answer(proc, n)
            session = _last_result["sessionId"]
            prompt = [{"type": "text", "text": "go"}]
            _send(proc, 9, "session/prompt", {"sessionId": session, "prompt": prompt})
            assert wait_until(lambda: sleeping(group) and sleeping(alone), 60), "never ran"
            proc.kill()  # as an editor's crash takes its agent down
            proc.communicate(timeout=30)
            assert wait_until(lambda: not sleeping(group) and not sleeping(alone), 30), (
                "commands outlived mm -acp"
            )
        finally:
            proc.kill()
            kill_sleepers(group, alone)


_last_result: dict[str, object] = {}


def _send(proc: subprocess.Popen[str], ident: int, method: str, params: object) -> None:
    assert proc.stdin is not None
    message = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()


def _answer(proc: subprocess.Popen[str], ident: int) -> None:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        assert line, "mm -acp ended"
        obj = json.loads(line)
        if obj.get("id") == ident and "method" not in obj:
            _last_result.clear()
            _last_result.update(obj["result"])
            return


@needs_landlock
async def test_a_timed_out_call_leaves_no_setsid_child(tmp_path: Path) -> None:
    group, alone = marker(), marker()
    ctx = ToolContext(cwd=tmp_path, settings=Settings())
    try:
        result = await BashTool(timeout=1).run(
            BashArgs(command=f"setsid sleep {alone} & sleep {group}"), ctx
        )
        assert result.output.endswith("[error: 1s timeout exceeded]")
        gone = await asyncio.to_thread(
            wait_until, lambda: not sleeping(group) and not sleeping(alone), 30
        )
        assert gone, "the setsid child outlived its call's timeout"
    finally:
        kill_sleepers(group, alone)


# Up to ten seconds: a condition looked for, not a time waited.
LOOK_FOR = (
    "for i in $(seq 100); do pgrep -fx 'sleep {job}' > /dev/null && echo alive && break; "
    "sleep 0.1; done"
)


@needs_landlock
def test_a_background_job_outlives_its_call_and_dies_with_mm(place: Place) -> None:
    job = marker()
    with ScriptedServer(
        Reply(tool_calls=[call("bash", {"command": f"setsid sleep {job} > /dev/null 2>&1 &"})]),
        # the job may not have become `sleep` yet on a loaded machine: looked for until it has
        Reply(tool_calls=[call("bash", {"command": f"{LOOK_FOR.format(job=job)}"})]),
        Reply("done"),
    ) as server:
        proc = place.mm(server, "-p", "go")
        try:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            assert "alive" in server.requests[2].messages[-1]["content"]  # after its call
            assert wait_until(lambda: not sleeping(job), 30), "the job outlived mm"
        finally:
            proc.kill()
            kill_sleepers(job)


LIFTS = (
    ("umount -l secrets; umount secrets; cat secrets/key.pem", False),
    ("umount -l /proc; ls /proc; cat secrets/key.pem", False),
    ("mkdir -p m; mount -t proc proc m; ls m/$MM", True),
    ("mkdir -p b; mount --bind secrets b; cat b/key.pem", False),
    ("unshare -m --propagation unchanged sh -c 'umount -l secrets; cat secrets/key.pem'", False),
    # a user namespace of the command's own, where it may mount and unmount what is its own
    ("unshare -Urm --propagation unchanged sh -c 'umount -l secrets; cat secrets/key.pem'", False),
    ("unshare -Urm --propagation unchanged sh -c 'umount -l /proc; ls /proc/$MM'", False),
    ("unshare -Urpf --mount-proc sh -c 'ls /proc/$MM; cat secrets/key.pem'", False),
    # a clone of the project's mount, without the covers mounted on it
    ('$PYTHON -c "$CLONE"', False),
    ('unshare -Urm $PYTHON -c "$CLONE"', False),
    ("nsenter -t $MM -m cat secrets/key.pem", True),
    ("ln secrets/key.pem hard.pem; cat hard.pem", False),
    ("exec 3<secrets/key.pem; cat <&3", False),
    ("cat /proc/1/root$PWD/secrets/key.pem", False),
    ("cat /proc/$MM/environ /proc/$MM/cmdline; ls /proc/$MM/fd", True),
    ("kill -9 $MM", True),
    ("ls -A secrets", False),
)
"""Ways a command might lift the covers of the launcher's mount namespace, or reach mm (True:
it names mm's pid, `$MM`, and must find nothing there)."""

CLONE = (
    "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
    "libc.syscall.restype = ctypes.c_long; "
    "fd = libc.syscall(428, ctypes.c_int(-100), b'.', ctypes.c_uint(1)); "
    "print(open(os.open('secrets/key.pem', os.O_RDONLY, dir_fd=fd)).read() if fd >= 0 "
    "else os.strerror(ctypes.get_errno()))"
)
"""open_tree(AT_FDCWD, ".", OPEN_TREE_CLONE), then the key through the clone."""


@needs_landlock
def test_the_covers_hold_and_the_project_stays_writable(place: Place) -> None:
    """`sandboxDeny: [secrets]` in the launcher's namespaces, as root and as a plain user (in a
    user namespace of the launcher's own): the folder is covered, every way to lift the cover
    or reach mm fails, and the project's top keeps every right: a file made there is written
    at once, one there is removed. Through the real `mm -p`, each way one bash call."""
    needs_namespaces(place)
    folder = place.project / "secrets"
    folder.mkdir()
    (folder / "key.pem").write_text(f"PRIVATE {CONFIG_KEY}\n")
    (place.project / "old.txt").write_text("old\n")
    place.who.own(place.project)
    work = "echo hi > top.txt && cat top.txt && rm old.txt && echo removed"
    commands = [f"MM=$(cat mm.pid); {c}" for c, _ in LIFTS] + [work]
    replies = [Reply(tool_calls=[call("bash", {"command": c})]) for c in commands]
    with ScriptedServer(*replies, Reply("done")) as server:
        more = {"MM_SANDBOX_DENY": "secrets", "PYTHON": place.who.python, "CLONE": CLONE}
        proc = place.mm(server, "-p", "go", env_more=more)
        (place.project / "mm.pid").write_text(str(proc.pid))
        place.who.own(place.project / "mm.pid")
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        told = [r.messages[-1]["content"] for r in server.requests[1:]]
    assert len(told) == len(commands)  # every call was made, and mm lived to the end
    for (command, names_mm), result in zip(LIFTS, told, strict=False):
        assert CONFIG_KEY not in result and "PRIVATE" not in result, (command, result)
        assert "unexpectedly" not in result, (command, result)  # an answer, not mm's error
        if names_mm:  # mm is not there to be named
            assert "No such" in result, (command, result)
    assert "key.pem" not in told[len(LIFTS) - 1]  # not even the name
    assert told[len(LIFTS)].startswith("hi\nremoved"), told[len(LIFTS)]
    assert (place.project / "top.txt").read_text() == "hi\n"
    assert not (place.project / "old.txt").exists()
    assert (folder / "key.pem").read_text() == f"PRIVATE {CONFIG_KEY}\n"
