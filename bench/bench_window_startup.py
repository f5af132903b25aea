"""Start-up of window mode to its first frame, against a bare Textual app, in the same run.

Each sample is a fresh Python process on a pseudo-terminal of 100x30, timed from just before the
process is started to the app's first frame (Textual's `Ready`, posted once the first frame has
been written), so Python's own start, the imports and the app's set-up all count. The variants:

- bare: `App` with nothing in it, exiting on its first frame: the floor.
- mm: `import mm_tui.app`, then `MMApp` with a boot that never returns, exiting on its first
  frame (a subclass in the child process; nothing of mm is changed).
- mm --demo (cli): `mm_tui.cli.main(["--demo"])`, the real `mm --demo`, with `MMApp` replaced in
  the child by a subclass that notes the first frame and exits once the engine is attached
  (the demo model, configuration, tools): first frame, and ready to take a request.

Rounds are interleaved so that a busy machine slows every variant alike; the medians are
compared. The heavy modules present at the first frame are listed: httpx, pydantic, selectolax,
the ACP package and the tools must stay off the path to the first frame.
Goal: mm's first frame at most 1.3x the bare app's.

Run: .venv/bin/python bench/bench_window_startup.py [rounds, 20 by default: the machine is noisy]
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

GOAL = 1.3
HEAVY = ("httpx", "httpcore", "pydantic", "pydantic_settings", "selectolax", "acp", "yaml")
HEAVY_MM = ("mm_tui.tools", "mm_tui.config", "mm_tui.engine.turn", "mm_tui.engine.provider")


def heavy_loaded() -> list[str]:
    names = set()
    for name in list(sys.modules):
        top = name.split(".")[0]
        if top in HEAVY:
            names.add(top)
        for prefix in HEAVY_MM:
            if name == prefix or name.startswith(prefix + "."):
                names.add(name if prefix == "mm_tui.tools" else prefix)
    return sorted(names)


# -- children: each runs in its own process and reports on the fd named by BENCH_REPORT_FD -------


def _report(**data: object) -> None:
    fd = int(os.environ["BENCH_REPORT_FD"])
    os.write(fd, (json.dumps(data) + "\n").encode())


def child_bare() -> None:
    started = time.perf_counter()
    from textual.app import App

    imported = time.perf_counter()

    class Bare(App[None]):
        def on_ready(self) -> None:
            _report(
                started=started,
                imported=imported,
                frame=time.perf_counter(),
                heavy=heavy_loaded(),
            )
            self.exit()

    Bare().run()


def child_mm() -> None:
    started = time.perf_counter()
    from mm_tui.app import MMApp

    imported = time.perf_counter()

    async def never():  # noqa: ANN202 - the boot of MMApp, which never returns
        import asyncio

        await asyncio.Event().wait()

    class FirstFrame(MMApp):
        # Textual then calls MMApp.on_ready too (handlers run along the MRO): the boot starts.
        def on_ready(self) -> None:
            frame = time.perf_counter()
            _report(started=started, imported=imported, frame=frame, heavy=heavy_loaded())
            self.exit(0)

    FirstFrame(never).run()  # pyright: ignore[reportArgumentType] - a boot that never ends


def child_cli_demo() -> None:
    began = time.perf_counter()
    import mm_tui.app
    import mm_tui.cli

    imported = time.perf_counter()
    seen: dict[str, object] = {}

    class Probe(mm_tui.app.MMApp):
        def on_ready(self) -> None:  # then MMApp.on_ready, which starts the boot
            seen["frame"] = time.perf_counter()
            seen["heavy"] = heavy_loaded()

        def attach(self, started: Any) -> None:
            super().attach(started)
            _report(
                started=began,
                imported=imported,
                frame=seen.get("frame"),
                heavy=seen.get("heavy"),
                ready=time.perf_counter(),
                heavy_ready=heavy_loaded(),
            )
            self.exit(0)

    mm_tui.app.MMApp = Probe  # type: ignore[misc] - run_window imports it when it runs
    mm_tui.cli.main(["--demo"])


CHILDREN = {"bare": child_bare, "mm": child_mm, "cli": child_cli_demo}


# -- the parent ---------------------------------------------------------------------------------


def run_child(kind: str, tmp: str) -> dict:
    import fcntl
    import pty
    import struct
    import subprocess
    import termios
    import threading

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    report_r, report_w = os.pipe()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEXTUAL")}
    env.update(
        TERM="xterm-256color",
        COLORTERM="truecolor",
        BENCH_REPORT_FD=str(report_w),
        TMPDIR=tmp,  # the demo's playground goes here and is removed with it
    )
    screen = bytearray()

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            screen.extend(data[-4096:])

    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--child", kind],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        pass_fds=(report_w,),
        start_new_session=True,
        cwd=tmp,
    )
    os.close(slave)
    os.close(report_w)
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    with os.fdopen(report_r, "rb") as report:
        line = report.readline()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    os.close(master)
    reader.join(timeout=2)
    if not line:
        tail = bytes(screen[-1500:]).decode(errors="replace")
        raise RuntimeError(f"{kind}: no report (exit {proc.returncode}); screen tail:\n{tail}")
    data = json.loads(line)
    data["t0"] = t0
    return data


def main(rounds: int) -> None:
    import compileall
    import shutil
    import statistics
    import tempfile

    import mm_tui

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from window_common import machine, verdict

    # mm's bytecode, as an installed package has it (pip compiles Textual's when installing it;
    # an editable install compiles nothing, and PYTHONDONTWRITEBYTECODE keeps imports from it).
    compileall.compile_dir(os.path.dirname(mm_tui.__file__), quiet=1)

    kinds = ["bare", "mm", "cli"]
    tmp = tempfile.mkdtemp(prefix="mm-bench-startup-")
    samples: dict[str, list[dict]] = {k: [] for k in kinds}
    try:
        for kind in kinds:  # warm up the file cache and the bytecode
            run_child(kind, tmp)
        for r in range(rounds):
            order = kinds if r % 2 == 0 else kinds[::-1]
            for kind in order:
                samples[kind].append(run_child(kind, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def med(kind: str, a: str, b: str) -> float:
        return statistics.median(s[b] - s[a] for s in samples[kind]) * 1000

    def least(kind: str) -> float:
        return min(s["frame"] - s["t0"] for s in samples[kind]) * 1000

    print(f"start-up to first frame, 100x30 pty, {rounds} interleaved rounds, medians (ms)")
    print(f"machine: {machine()}")
    print(
        f"{'':26}{'first frame':>12}{'(least)':>9}{'python':>9}{'imports':>9}{'app':>9}{'ready':>9}"
    )
    rows = [("bare Textual app (floor)", "bare"), ("mm (MMApp)", "mm"), ("mm --demo (cli)", "cli")]
    for label, kind in rows:
        ready = f"{med(kind, 't0', 'ready'):9.1f}" if kind == "cli" else f"{'':9}"
        print(
            f"{label:26}{med(kind, 't0', 'frame'):12.1f}{least(kind):9.1f}"
            f"{med(kind, 't0', 'started'):9.1f}"
            f"{med(kind, 'started', 'imported'):9.1f}{med(kind, 'imported', 'frame'):9.1f}{ready}"
        )
    for line in (
        "first frame: process start to the first frame, and the least of the rounds;",
        "python: process start to the script's first line; imports: textual.app for the bare",
        "app, mm_tui.app (and mm_tui.cli) for mm; app: construction to the first frame;",
        "ready: the engine attached on the demo model, able to take a request",
    ):
        print(f"  {line}")
    floor = med("bare", "t0", "frame")
    for label, kind in rows[1:]:
        ratio = med(kind, "t0", "frame") / floor
        print(
            f"ratio {label:20} {ratio:6.2f}x  (goal: <= {GOAL}x) -> {verdict(ratio <= GOAL)}"
            f"   (least against least: {least(kind) / least('bare'):.2f}x)"
        )
    print("heavy modules loaded at the first frame:")
    for label, kind in rows:
        heavy = sorted({m for s in samples[kind] for m in (s.get("heavy") or [])})
        print(f"  {label:26}{', '.join(heavy) or '(none)'}")
    heavy = sorted({m for s in samples["cli"] for m in s.get("heavy_ready") or []})
    print(f"  {'mm --demo once ready':26}{', '.join(heavy) or '(none)'}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        CHILDREN[sys.argv[2]]()
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
