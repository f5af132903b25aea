"""What an idle window costs: mm's CPU over 30 s with nothing happening, next to a bare Textual app.

mm runs next to the model on the same cores, so an idle window should cost nothing: no timer
while nothing moves. Both programs run for real in a tmux terminal of 100x30 (the driver, the
terminal's input, the prompt's blinking cursor: all that an idle person's window does), and the
CPU they use is read from /proc (user + system time) over the same span, after they are ready.

- mm: `mm --demo` (the built-in demo model: no server to wait for), ready when its prompt's
  placeholder is on screen.
- floor: a Textual app with one TextArea, focused, as mm's prompt is (its cursor blinks).

Goal: mm under 0.5% of a core.

Run: .venv/bin/python bench/bench_window_idle.py [seconds, 30 by default]  (--quick: 2 seconds)
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
HZ = os.sysconf("SC_CLK_TCK")

FLOOR_APP = """
from textual.app import App
from textual.widgets import Static, TextArea

class Bare(App):
    def compose(self):
        yield Static("ready")
        yield TextArea()

Bare().run()
"""


def tmux(server: str, *args: str) -> subprocess.CompletedProcess[str]:
    """tmux on a server of the bench's own (`-L`), never the person's."""
    command = ["tmux", "-L", server, "-f", os.devnull, *args]
    return subprocess.run(command, capture_output=True, text=True)


def cpu_seconds(pid: int) -> float:
    """User + system time of a process, in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def idle_cpu(name: str, command: str, ready: str, seconds: float, cwd: Path) -> float:
    """The share of a core `command` uses over `seconds` once `ready` is on its screen."""
    # A server per program: the first one's server exits with its last session, and a
    # new-session sent while it exits fails ("server exited unexpectedly").
    server = f"mm-bench-{os.getpid()}-{name}"
    session = f"idle-{name}"
    started = tmux(
        server, "new-session", "-d", "-s", session, "-x", "100", "-y", "30", "-c", str(cwd), command
    )
    if started.returncode != 0:
        raise RuntimeError(f"{name}: tmux new-session failed: {started.stderr.strip()}")
    pid = 0
    try:
        deadline = time.monotonic() + 60
        screen = ""
        while ready not in screen:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} never showed {ready!r}; its screen:\n{screen}")
            time.sleep(0.2)
            screen = tmux(server, "capture-pane", "-p", "-t", session).stdout
        pid = int(tmux(server, "display", "-p", "-t", session, "#{pane_pid}").stdout.strip())
        time.sleep(2)  # what start-up left to do after its first frame
        before, start = cpu_seconds(pid), time.monotonic()
        time.sleep(seconds)
        used, span = cpu_seconds(pid) - before, time.monotonic() - start
        return used / span
    finally:
        tmux(server, "kill-server")
        # tmux leaves the socket of a server that exited behind
        folder = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
        (folder / server).unlink(missing_ok=True)
        gone(pid)


def gone(pid: int) -> None:
    """Wait (up to 30 s) for the program to end: mm writes its session as it goes, and the
    folder it works in is removed next; what it wrote after that would stay in the temp folder."""
    deadline = time.monotonic() + 30
    while pid and running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def running(pid: int) -> bool:
    """Whether the process is there and not a zombie (one nobody has reaped yet has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def main() -> None:
    from private_home import private_home

    private_home()  # a home of its own: none of the person's is read or written
    if "--quick" in sys.argv:
        seconds = 2.0
    else:
        seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder)
        floor_script = cwd / "bare.py"
        floor_script.write_text(FLOOR_APP)
        # TMPDIR too: the demo's playground goes in this folder and with it, not in the machine's
        # temp folder, where mm keeps it three days for a person
        here = shlex.quote(folder)
        env = f"exec env HOME={here} TMPDIR={here} TERM=xterm-256color"
        mm = f"{env} PYTHONPATH={shlex.quote(str(ROOT))} {PYTHON} -m mm_tui.cli --demo"
        bare = f"{env} {PYTHON} {shlex.quote(str(floor_script))}"
        print(f"an idle window over {seconds:.0f} s, in tmux 100x30; load {os.getloadavg()[0]:.2f}")
        floor = idle_cpu("floor", bare, "ready", seconds, cwd)
        ours = idle_cpu("mm", mm, "Type a request", seconds, cwd)
    print(f"  floor (a bare Textual app, a focused TextArea)  {floor * 100:6.2f}% of a core")
    print(f"  mm --demo, idle                                 {ours * 100:6.2f}% of a core")
    ratio = ours / floor if floor else float("inf")
    goal = "goal met" if ours < 0.005 else "goal NOT met"
    print(
        f"  ratio mm / floor {ratio:.2f}x; mm {ours * 100:.2f}% (goal: < 0.5% of a core) -> {goal}"
    )


if __name__ == "__main__":
    main()
