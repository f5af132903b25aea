"""Start-up of window mode: to its first frame and to "ready", against a bare Textual app's first
frame measured in the same run.

Each sample is a fresh Python process on a pseudo-terminal of 100x30, timed from just before the
process is started, so Python's own start, the imports and the app's set-up all count.

- first frame: Textual's `Ready`, posted once the first frame has been written.
- ready: the moment a request the person sends would go to the model at once, not wait in the
  queue: the configuration read, the model server picked (a configured one asked, or detection
  done), the session made, the tools registered and the engine attached to the window.
  `MMApp.attach` marks it: it sets `MMApp.engine_ready` (an asyncio.Event) and `MMApp.ready_at`
  (its perf_counter time), which is what is read here; nothing is guessed from the screen.

The variants:

- bare: `App` with nothing in it, exiting on its first frame: the floor.
- mm: `import mm_tui.window.app`, then `MMApp` with a boot that never returns, exiting on its first
  frame (a subclass in the child process; nothing of mm is changed). The collector is paused
  before the import, as `mm` pauses it (`cli.run_window`) until ready.
- mm --demo (cli): `mm_tui.cli.main(["--demo"])`, the real `mm --demo`, with `MMApp` replaced in
  the child by a subclass that notes the first frame and exits once ready (made as
  `mm_tui.window.app` is imported, where and when `mm` imports it).
- mm --demo, a config file (cli): as mm --demo, with a configuration file in the person's
  folder (`~/.config/mm/config.yaml`, three keys): the path that reads YAML and validates it.
- mm, server detected (cli): `mm_tui.cli.main([])`, the real `mm` with no configuration, on a
  machine where one local model server runs: the scripted OpenAI-compatible server of the tests
  (`tests/support/scripted_server/`, serving as llama.cpp, with its context window at /props),
  which this process runs on 127.0.0.1. Detection is real: the child's preset table (patched as
  `mm_tui.engine.servers` is imported) probes closed ports for Ollama, Docker Model Runner, LM
  Studio and vLLM and the scripted server for llama.cpp, over real sockets; the run fails unless
  mm attaches to that server's model.
- mm, server configured (cli): `mm_tui.cli.main([])` with a configuration file that names that
  same scripted server (`baseUrl`, `model`, `provider`), as a person names their Ollama: the
  path that checks a configured server before ready.

Every child runs with a fresh HOME and working folder (no configuration file is read but the one
the config-file variant writes).

Rounds are interleaved so that a busy machine slows every variant alike; the medians are
compared. The heavy modules present at the first frame are listed: httpx, pydantic, selectolax,
the ACP package and the tools must stay off the path to the first frame; then those present at
ready (as `attach` returns, before the threads it starts once ready load httpx and the tools'
argument classes): without a configuration file, pydantic stays off that path too.
Goals: mm's first frame at most 1.1x the bare app's first frame; mm ready at most 1.25x it.

Run: .venv/bin/python bench/bench_window_startup.py [rounds, 40 by default: the machine is noisy,
     and medians of 20 moved by 3 to 5% from run to run]
     (--quick: 1 round, after the warm-up one)
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

GOAL = 1.1
READY_GOAL = 1.25
HEAVY = ("httpx", "httpcore", "pydantic", "pydantic_settings", "selectolax", "acp", "yaml")
HEAVY_MM = ("mm_tui.tools", "mm_tui.config", "mm_tui.engine.turn", "mm_tui.engine.provider")
SERVED_MODEL = "bench-model"


def loaded() -> list[str]:
    """The modules loaded now, looked at later (`heavy_loaded`): a copy of the names costs the
    child microseconds where looking through them cost it a third of a millisecond, which a
    child that goes on to ready counted as mm's."""
    return [name for name, module in list(sys.modules.items()) if module is not None]


def heavy_loaded(names: list[str] | None = None) -> list[str]:
    found = set()
    # `loaded` leaves out a None module: an import blocked (mm_tui/cli.py's main: httpx._main)
    for name in loaded() if names is None else names:
        top = name.split(".")[0]
        if top in HEAVY:
            found.add(top)
        for prefix in HEAVY_MM:
            if name == prefix or name.startswith(prefix + "."):
                found.add(name if prefix == "mm_tui.tools" else prefix)
    return sorted(found)


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
    """MMApp as `mm` runs it (`cli.run_window`): the collector paused before the app is
    imported, the boot (here one that never returns) resuming it once ready."""
    import gc

    started = time.perf_counter()
    gc.disable()
    from mm_tui.window.app import MMApp

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


def _cli(argv: list[str], check: Any = None) -> None:
    """The real `mm` (mm_tui.cli.main) with MMApp replaced by a subclass that notes the first
    frame and, once the app says it is ready, reports and exits. The subclass is made as
    `mm_tui.window.app` is imported, where the real program imports it (`run_window`, after it
    pauses the garbage collector): importing it here first cost the child the collector's passes
    over Textual's import, 5 to 10 ms that `mm` does not pay."""
    began = time.perf_counter()
    import mm_tui.cli

    seen: dict[str, Any] = {}

    def probe(module: Any) -> None:
        seen["imported"] = time.perf_counter()

        class Probe(module.MMApp):
            def on_ready(self) -> None:  # then MMApp.on_ready, which starts the boot
                seen["frame"] = time.perf_counter()
                seen["loaded"] = loaded()

            def attach(self, started: Any) -> None:
                super().attach(started)  # sets ready_at, then starts the threads of ready
                # what ready loaded, before those threads load httpx and pydantic
                heavy_ready = heavy_loaded()
                problem = check(self) if check is not None else None
                _report(
                    started=began,
                    imported=seen["imported"],
                    frame=seen["frame"],
                    heavy=heavy_loaded(seen["loaded"]),
                    ready=self.ready_at,
                    heavy_ready=heavy_ready,
                    problem=problem,
                )
                self.exit(0)

        module.MMApp = Probe  # run_window imports it from the module when it runs

    _patch_on_import("mm_tui.window.app", probe)
    mm_tui.cli.main(argv)


def child_cli_demo() -> None:
    _cli(["--demo"])


def _patch_on_import(name: str, patch: Any) -> None:
    """Call `patch` with module `name` as soon as it is imported (whenever and in whatever
    thread that happens). The finder is a plain class (sys.meta_path takes any object with
    `find_spec`): `importlib.abc`, which mm does not load, cost this child 13 to 15 ms that were
    counted as mm's."""
    import importlib.machinery

    class Finder:
        def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
            if fullname != name:
                return None
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is None or spec.loader is None:
                return spec
            loader: Any = spec.loader
            exec_module = loader.exec_module

            def patched(module: Any) -> None:
                exec_module(module)
                patch(module)

            loader.exec_module = patched
            return spec

    sys.meta_path.insert(0, Finder())


def _patch_presets_on_import(presets: list[tuple[str, str]]) -> None:
    """Give `mm_tui.engine.servers` this preset table as it is imported, so that detection
    probes these addresses."""

    def patch(module: Any) -> None:
        module.PRESETS = tuple(module.Preset(n, url) for n, url in presets)

    _patch_on_import("mm_tui.engine.servers", patch)


def _on_the_scripted_server(app: Any) -> str | None:
    client = app.engine.client
    if (client.model, client.provider) != (SERVED_MODEL, "llama.cpp"):
        return f"attached to {client.model} @ {client.provider}, not the scripted server"
    return None


def child_cli_detect() -> None:
    presets = json.loads(os.environ["BENCH_PRESETS"])
    _patch_presets_on_import(presets)
    _cli([], _on_the_scripted_server)


def child_cli_local() -> None:
    _cli([], _on_the_scripted_server)


CHILDREN = {
    "bare": child_bare,
    "mm": child_mm,
    "cli": child_cli_demo,
    "configured": child_cli_demo,
    "detect": child_cli_detect,
    "local": child_cli_local,
}


# -- the parent ---------------------------------------------------------------------------------


def run_child(kind: str, tmp: str, extra_env: dict[str, str] | None = None) -> dict:
    import fcntl
    import pty
    import struct
    import subprocess
    import termios
    import threading

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    report_r, report_w = os.pipe()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TEXTUAL", "MM_", "XDG_")) and k != "OPENAI_API_KEY"
    }
    env.update(
        TERM="xterm-256color",
        COLORTERM="truecolor",
        BENCH_REPORT_FD=str(report_w),
        TMPDIR=tmp,  # the demo's playground goes here and is removed with it
        HOME=os.path.join(tmp, "home"),  # no configuration file of the person's
    )
    env.update(extra_env or {})
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
        cwd=os.path.join(tmp, "work"),
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
    if data.get("problem"):
        raise RuntimeError(f"{kind}: {data['problem']}")
    data["t0"] = t0
    return data


ROWS = [
    ("bare Textual app (floor)", "bare"),
    ("mm (MMApp)", "mm"),
    ("mm --demo (cli)", "cli"),
    ("mm --demo, a config file", "configured"),
    ("mm, server detected (cli)", "detect"),
    ("mm, server configured", "local"),
]
READY_KINDS = ("cli", "configured", "detect", "local")
CONFIG_FILE = "theme: mm-dark\nmaxOutput: 20000\nsandbox: auto\n"
"""The configuration file of the config-file variant: keys a person sets, valid."""
LOCAL_CONFIG = "baseUrl: {url}\nmodel: {model}\nprovider: llama.cpp\n"
"""The configuration file of the configured-server variant: the scripted server, as a person
names their Ollama or llama.cpp (on its well-known port, whose provider mm then knows)."""


def main(rounds: int) -> None:
    import compileall
    import shutil
    import statistics
    import tempfile

    from private_home import private_home

    import mm_tui

    private_home()  # a home of its own: none of the person's is read or written

    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    sys.path.insert(0, os.path.join(os.path.dirname(here), "tests"))
    from support.scripted_server import ScriptedServer, closed_port_url
    from window_common import machine, verdict

    # mm's bytecode, as an installed package has it (pip compiles Textual's when installing it;
    # an editable install compiles nothing, and PYTHONDONTWRITEBYTECODE keeps imports from it).
    compileall.compile_dir(os.path.dirname(mm_tui.__file__), quiet=1)

    kinds = [kind for _, kind in ROWS]
    tmp = tempfile.mkdtemp(prefix="mm-bench-startup-")
    os.makedirs(os.path.join(tmp, "home"))
    os.makedirs(os.path.join(tmp, "work"))
    samples: dict[str, list[dict]] = {k: [] for k in kinds}
    server = ScriptedServer(models=[SERVED_MODEL], serves="llama.cpp", context_window=32768).start()
    presets = [
        ("Ollama", closed_port_url()),
        ("Docker Model Runner", closed_port_url("/engines/v1")),
        ("llama.cpp", server.base_url),
        ("LM Studio", closed_port_url()),
        ("vLLM", closed_port_url()),
    ]
    configured_home = os.path.join(tmp, "home-configured")
    os.makedirs(os.path.join(configured_home, ".config", "mm"))
    with open(os.path.join(configured_home, ".config", "mm", "config.yaml"), "w") as file:
        file.write(CONFIG_FILE)
    local_home = os.path.join(tmp, "home-local")
    os.makedirs(os.path.join(local_home, ".config", "mm"))
    with open(os.path.join(local_home, ".config", "mm", "config.yaml"), "w") as file:
        file.write(LOCAL_CONFIG.format(url=server.base_url, model=SERVED_MODEL))
    env = {
        "detect": {"BENCH_PRESETS": json.dumps(presets)},
        "configured": {"HOME": configured_home},
        "local": {"HOME": local_home},
    }
    try:
        for kind in kinds:  # warm up the file cache and the bytecode
            run_child(kind, tmp, env.get(kind))
        for r in range(rounds):
            order = kinds if r % 2 == 0 else kinds[::-1]
            for kind in order:
                samples[kind].append(run_child(kind, tmp, env.get(kind)))
    finally:
        server.close()
        shutil.rmtree(tmp, ignore_errors=True)

    def med(kind: str, a: str, b: str) -> float:
        return statistics.median(s[b] - s[a] for s in samples[kind]) * 1000

    def least(kind: str, b: str = "frame") -> float:
        return min(s[b] - s["t0"] for s in samples[kind]) * 1000

    print(f"start-up of window mode, 100x30 pty, {rounds} interleaved rounds, medians (ms)")
    print(f"machine: {machine()}")
    print(
        f"{'':27}{'first frame':>12}{'(least)':>9}{'python':>9}{'imports':>9}{'app':>9}"
        f"{'ready':>9}{'(least)':>9}{'after':>9}"
    )
    for label, kind in ROWS:
        ready = (
            f"{med(kind, 't0', 'ready'):9.1f}{least(kind, 'ready'):9.1f}"
            f"{med(kind, 'frame', 'ready'):9.1f}"
            if kind in READY_KINDS
            else ""
        )
        print(
            f"{label:27}{med(kind, 't0', 'frame'):12.1f}{least(kind):9.1f}"
            f"{med(kind, 't0', 'started'):9.1f}"
            f"{med(kind, 'started', 'imported'):9.1f}{med(kind, 'imported', 'frame'):9.1f}{ready}"
        )
    for line in (
        "first frame: process start to the first frame, and the least of the rounds;",
        "python: process start to the script's first line; imports: textual.app for the bare",
        "app, mm_tui.window.app (and mm_tui.cli) for mm; app: construction to the first frame;",
        "ready: process start to MMApp.ready_at (a request sent now goes to the model), and the",
        "least of the rounds; after: first frame to ready",
    ):
        print(f"  {line}")
    floor = med("bare", "t0", "frame")
    for label, kind in ROWS[1:]:
        ratio = med(kind, "t0", "frame") / floor
        print(
            f"first frame {label:26} {ratio:5.2f}x the bare app's  (goal: <= {GOAL}x) -> "
            f"{verdict(ratio <= GOAL)}   (least against least: {least(kind) / least('bare'):.2f}x)"
        )
    for label, kind in ROWS:
        if kind not in READY_KINDS:
            continue
        ratio = med(kind, "t0", "ready") / floor
        print(
            f"ready       {label:26} {ratio:5.2f}x the bare app's first frame  "
            f"(goal: <= {READY_GOAL}x) -> {verdict(ratio <= READY_GOAL)}   "
            f"(least against least: {least(kind, 'ready') / least('bare'):.2f}x)"
        )
    print("heavy modules loaded at the first frame:")
    for label, kind in ROWS:
        heavy = sorted({m for s in samples[kind] for m in (s.get("heavy") or [])})
        print(f"  {label:27}{', '.join(heavy) or '(none)'}")
    print("and once ready:")
    for label, kind in ROWS:
        if kind in READY_KINDS:
            heavy = sorted({m for s in samples[kind] for m in s.get("heavy_ready") or []})
            print(f"  {label:27}{', '.join(heavy) or '(none)'}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        CHILDREN[sys.argv[2]]()
    elif "--quick" in sys.argv:
        main(1)
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
