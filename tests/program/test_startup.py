"""Start-up made quicker without changing what it makes: the window's boot as `mm`
runs it, a request typed before mm is ready, a configuration error found after the first frame,
the tools made while detection waits on the network, the one TLS context, and what importing mm
and running it load."""

from __future__ import annotations

import asyncio
import itertools
import json
import ssl
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support.scripted_server import ScriptedServer, closed_port_url
from support.waiting import until
from support.window_helpers import all_text, settle

from mm_tui.cli import PLAIN_FLAGS, _playground_meanwhile, parse_flags, parser, window_boot
from mm_tui.config import Settings
from mm_tui.core.paths import PLAYGROUND_PREFIX
from mm_tui.core.sandbox import landlock_abi
from mm_tui.engine.servers import Preset
from mm_tui.engine.tls import tls_context
from mm_tui.startup import Started, start
from mm_tui.window.app import MMApp
from mm_tui.window.transcript.store import NoticeItem

ROOT = Path(__file__).resolve().parents[2]


def skills(started: Started) -> list[str]:
    tool = started.engine.registry.get("read_skill")
    return sorted(getattr(tool, "skills", {}))


def notices(app: MMApp) -> list[str]:
    return [i.text for i in app.main.transcript.items if isinstance(i, NoticeItem)]


async def test_a_config_error_found_after_the_first_frame_closes_with_its_line(
    work: Path,
) -> None:
    """The configuration is read after the first frame, by the boot `mm` runs: a broken file
    closes the window with exit status 2 and the one line that names the file."""
    (work / ".mm").mkdir()
    (work / ".mm" / "config.yaml").write_text("maxOuptut: 5\n")
    app = MMApp(window_boot(parser().parse_args([]), work))
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.return_code is not None, "the window closing", pilot=pilot)
    assert app.return_value == 2  # what `mm` exits with
    assert app.exit_message is not None and len(app.exit_message.splitlines()) == 1
    assert ".mm/config.yaml" in app.exit_message and "maxOuptut" in app.exit_message
    assert app.engine is None and not app.engine_ready.is_set()


async def test_a_request_typed_before_ready_goes_to_the_detected_server_once(
    tmp_path: Path,
) -> None:
    """Real start-up with real detection (closed ports, then the scripted server): a request sent
    while start-up is still on its way waits, and goes to the server once, when mm is ready."""
    with ScriptedServer("hello from the server") as server:
        presets = [
            Preset("Ollama", closed_port_url()),
            Preset("llama.cpp", server.base_url),
            Preset("vLLM", closed_port_url()),
        ]
        gate = asyncio.Event()

        async def boot() -> Started:
            await gate.wait()  # the request is typed before start-up even begins
            settings = Settings(sessionsDir=str(tmp_path / "sessions"))
            return await start(settings, tmp_path, presets=presets)

        app = MMApp(boot, clock=lambda: 100.0)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            assert app.engine is None and not app.engine_ready.is_set()
            await pilot.press(*"early bird", "enter")
            await until(lambda: any("early bird" in n for n in notices(app)), "queued", pilot=pilot)
            assert server.requests == []
            gate.set()
            await app.engine_ready.wait()
            assert app.engine is not None and app.ready_at is not None
            assert (app.engine.client.provider, app.engine.client.model) == (
                "llama.cpp",
                server.model_name,
            )
            await until(lambda: server.requests, "the request", pilot=pilot)
            await settle(pilot, app)
            assert [r.messages[-1] for r in server.requests] == [
                {"role": "user", "content": "early bird"}
            ]
            assert "hello from the server" in all_text(app)


async def test_the_tools_made_during_detection_are_the_playgrounds_when_no_server_answers(
    tmp_path: Path,
) -> None:
    """The tools and the project's instructions are made while detection runs, for the folder
    mm started in; when no server answers, the demo moves to a playground, and what it gets is
    the playground's, not the person's folder's (its skills, its AGENTS.md)."""
    (tmp_path / "AGENTS.md").write_text("The person's own instructions.\n")
    (tmp_path / ".mm" / "skills" / "deploy").mkdir(parents=True)
    (tmp_path / ".mm" / "skills" / "deploy" / "SKILL.md").write_text("# Deploy\n\nShip it.\n")
    mine = await start(Settings(), tmp_path, presets=[Preset("Ollama", closed_port_url())])
    assert skills(mine) == ["deploy"]  # made for the folder, when it stays
    assert mine.engine.instructions.listing()
    await mine.engine.aclose()

    started = await start(
        Settings(), tmp_path, presets=[Preset("Ollama", closed_port_url())], playground=True
    )
    engine = started.engine
    try:
        assert engine.cwd != tmp_path and (engine.cwd / "greet.py").is_file()
        assert "deploy" not in skills(started)  # the playground has skills of its own
        assert not engine.instructions.listing()
    finally:
        await engine.aclose()


def test_the_model_server_clients_share_one_verifying_tls_context() -> None:
    context = tls_context()
    assert tls_context() is context
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 0  # the certificate authorities are loaded


def test_a_process_that_ends_while_the_tls_context_is_made_exits_cleanly(work: Path) -> None:
    """`mm -acp --config missing.yaml` stops at once, while the TLS thread loads the bundle:
    ending then crashed in OpenSSL's exit handlers (SIGSEGV, in about half the runs) before the
    thread was waited for."""
    mm = [sys.executable, "-m", "mm_tui.cli", "-acp", "--config", "missing.yaml"]
    for _ in range(6):
        done = subprocess.run(
            mm, capture_output=True, text=True, cwd=work, stdin=subprocess.DEVNULL
        )
        assert (done.returncode, done.stderr) == (2, "mm: missing.yaml: no such file\n")


def test_importing_mm_changes_no_other_packages_modules() -> None:
    """Whether httpx may load its command-line client is the program's choice (`cli.main`):
    importing the engine, or any module of mm, blocks no import of another package."""
    code = (
        "import importlib, json, pkgutil, sys; import mm_tui.engine; "
        "engine = 'httpx._main' in sys.modules; "
        "[importlib.import_module(m.name) "
        "for m in pkgutil.walk_packages(mm_tui.__path__, 'mm_tui.')]; "
        "print(json.dumps([engine, sorted(m for m, v in sys.modules.items() if v is None)]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == [False, []]


def _loaded_when(
    method: str, boot: tuple[str, str], cwd: Path, *, after: str = "pass"
) -> list[str]:
    """The modules a window in a process of its own has loaded when its `method` runs (after
    `after`, MMApp's own if it is called), where it ends. `boot`: the app's boot, as an
    expression and the lines that define what it names."""
    expression, lines = boot
    code = (
        f"import asyncio, json, sys\nfrom pathlib import Path\n{lines}"
        "from mm_tui.window.app import MMApp\n"
        "class Probe(MMApp):\n"
        f"    def {method}(self, *args):\n"
        f"        {after}\n"
        "        self.loaded = sorted(sys.modules)\n"
        "        self.exit(0)\n"
        f"app = Probe({expression})\n"
        "app.run(headless=True, size=(100, 30))\n"
        "print(json.dumps(app.loaded))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.splitlines()[-1])


def test_the_first_frame_loads_only_what_it_draws() -> None:
    """The window's first frame (an empty transcript, the boot not yet begun) loads neither the
    engine (its events, the configuration, the tools, the HTTP client, pydantic) nor the
    transcript's renderers (Rich's Markdown among them), nor importlib.resources for mm's own
    themes, nor Textual's TextArea (a stand-in draws the empty prompt), nor the permission box:
    they load after it, or when first needed (docs/performance.md)."""
    boot = "never", "async def never():\n    await asyncio.Event().wait()\n"
    loaded = _loaded_when("on_ready", boot, ROOT)  # before MMApp.on_ready, which boots
    assert "mm_tui.window.screens.main" in loaded
    kept_off = (
        "mm_tui.core.events",
        "mm_tui.config",
        "mm_tui.engine",
        "mm_tui.tools",
        "mm_tui.startup",
        "mm_tui.window.transcript.renderers.by_item",
        "mm_tui.window.transcript.renderers.answer",
        "mm_tui.terminal",
        "importlib.resources",
        "rich.markdown",
        "markdown_it",
        "httpx",
        "pydantic",
        "yaml",
        "mm_tui.window.widgets.prompt",
        "mm_tui.window.widgets.permission",
        "textual.widgets._text_area",
        "textual.document",
        "tree_sitter",
    )
    stand_in = "mm_tui.window.widgets.prompt_stand_in"
    assert [m for m in loaded if m.startswith(kept_off) and m != stand_in] == []


def test_ready_loads_neither_the_sandbox_nor_the_prompts_text_area(work: Path) -> None:
    """When the window is ready (`MMApp.attach`) a request can go: neither the sandbox the
    file tools and bash work under (its launcher, the file gate) nor Textual's TextArea (its
    stand-in takes the typing until then) has been loaded; they load after it, the sandbox in
    a thread (docs/performance.md)."""
    boot = (
        "window_boot(parser().parse_args(['--demo']), Path.cwd())",
        ("from mm_tui.cli import parser, window_boot\n"),
    )
    loaded = _loaded_when("attach", boot, work, after="super().attach(*args)")
    assert "mm_tui.engine.turn" in loaded and "mm_tui.tools.bash" in loaded
    kept_off = (
        "mm_tui.core.sandbox",
        "mm_tui.core.launcher",
        "mm_tui.core.file_access",
        "mm_tui.window.widgets.prompt",
        "mm_tui.window.widgets.permission",
        "textual.widgets._text_area",
    )
    assert [m for m in loaded if m.startswith(kept_off) and "prompt_stand_in" not in m] == []


def test_the_program_loads_no_command_line_client_of_httpx(work: Path) -> None:
    """`mm` keeps httpx's command-line client (click, pygments, Rich's progress bars) out of
    its process: the model client then imports httpx without them."""
    code = (
        "import json, sys; from mm_tui.cli import main; "
        f"status = main(['-p', 'hello', '--base-url', {closed_port_url()!r}]); import httpx; "
        "blocked = sys.modules.get('httpx._main', 0) is None; "
        "print(json.dumps([status, blocked, sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('click', 'pygments') or m == 'rich.progress')]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=work, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout.splitlines()[-1]) == [2, True, []]


@pytest.mark.parametrize("demo", [True, False])
async def test_window_boot_reads_the_flags(work: Path, demo: bool) -> None:
    """`window_boot` is what `mm` runs in the window: the flags reach the configuration."""
    argv = ["--demo"] if demo else ["--model", "flagged", "--base-url", closed_port_url()]
    started = await window_boot(parser().parse_args(argv), work)()
    try:
        assert started.on_demo is demo
        if not demo:
            assert started.engine.client.model == "flagged"
            assert started.engine.server_answering is False
    finally:
        await started.engine.aclose()


async def test_the_demo_window_works_in_the_playground_its_boot_makes(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mm --demo` in the window makes its playground in a thread the boot starts
    (`_playground_meanwhile`); the boot moves there and works there. One that cannot be made
    closes the window with a line saying so."""
    monkeypatch.chdir(work)  # the boot moves the process there; back after the test
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    args = parser().parse_args(["--demo"])
    started = await window_boot(args, work, playground=_playground_meanwhile)()
    try:
        folder = started.engine.cwd
        assert folder.parent == work and folder.name.startswith(PLAYGROUND_PREFIX)
        assert (folder / "greet.py").is_file() and Path.cwd() == folder
    finally:
        await started.engine.aclose()

    def cannot() -> Path:
        raise PermissionError(13, "Permission denied", str(work))

    with pytest.raises(RuntimeError, match="the demo's playground cannot be made"):
        await window_boot(args, work, playground=lambda: cannot)()


async def test_commands_run_unconfined_is_a_warning_of_start_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where Landlock is missing (simulated), auto mode says once that commands run unconfined,
    among the warnings (the window shows those as warnings, not as plain notes); where it works,
    start-up says nothing of the sandbox."""
    started = await start(Settings(), tmp_path, presets=[Preset("Ollama", closed_port_url())])
    try:
        if landlock_abi({})[0] >= 1:  # a kernel without Landlock warns here too
            assert not [w for w in started.warnings + started.notes if "sandbox" in w]
    finally:
        await started.engine.aclose()
    monkeypatch.setenv("MM_SANDBOX_FAKE_ABI", "0")
    started = await start(Settings(), tmp_path, presets=[Preset("Ollama", closed_port_url())])
    try:
        sandbox = [w for w in started.warnings if "sandbox" in w]
        assert sandbox == [
            "[warning: sandbox: this kernel has no Landlock (simulated by MM_SANDBOX_FAKE_ABI=0) "
            "— commands run unconfined; set sandbox: strict to refuse them instead]"
        ]
        assert started.notes.count(sandbox[0]) == 1
    finally:
        await started.engine.aclose()


def test_plain_flags_are_read_as_argparse_reads_them() -> None:
    """`parse_flags` reads `mm`, `mm --demo`, `mm --no-yolo --demo` and the like without
    argparse (docs/performance.md), to the namespace argparse gives, in any order and
    repeated; anything else is argparse's to read: a prefix, a value, flags that exclude each
    other, --help."""
    for count in range(4):
        for words in itertools.product(PLAIN_FLAGS, repeat=count):
            argv = list(words)
            assert vars(parse_flags(argv)) == vars(parser().parse_args(argv)), argv
    assert parse_flags(["--dem"]).demo is True  # argparse takes a prefix
    assert parse_flags(["--demo", "--theme", "x"]).theme == "x"
    with pytest.raises(SystemExit):
        parse_flags(["--window", "--line"])
    with pytest.raises(SystemExit):
        parse_flags(["--yolo=1"])


def test_reading_plain_flags_loads_no_argparse() -> None:
    code = (
        "import sys\n"
        "from mm_tui.cli import parse_flags\n"
        "parse_flags(['--demo', '--no-yolo'])\n"
        "print('argparse' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


DEMO_IN_A_TERMINAL = """\
import json, os, sys, threading
import mm_tui.window.app as window_app

class Probe(window_app.MMApp):
    def on_ready(self):  # the first frame; MMApp.on_ready, which starts the boot, runs next
        self.at_frame = {
            "threads": sorted(t.name for t in threading.enumerate()),
            "playgrounds": [n for n in os.listdir(os.environ["TMPDIR"]) if n.startswith(PREFIX)],
        }

    def attach(self, started):
        super().attach(started)
        report = {**self.at_frame, "cwd": str(started.engine.cwd), "now": os.getcwd()}
        with open(os.environ["REPORT"], "w") as file:
            json.dump(report, file)
        self.exit(0)

window_app.MMApp = Probe
from mm_tui.cli import main
sys.exit(main(["--demo"]))
"""


def test_the_demo_makes_its_playground_after_the_first_frame(tmp_path: Path) -> None:
    """`mm --demo` in a terminal: nothing of the playground (its thread, its folder) is on the
    way to the first frame; the boot makes it beside its imports, then works there."""
    import os
    import pty
    import threading

    temp, home, report = tmp_path / "tmp", tmp_path / "home", tmp_path / "report.json"
    temp.mkdir()
    home.mkdir()
    code = f"PREFIX = {PLAYGROUND_PREFIX!r}\n{DEMO_IN_A_TERMINAL}"
    env = {**os.environ, "TMPDIR": str(temp), "HOME": str(home), "REPORT": str(report)}
    env["TERM"] = "xterm-256color"
    leader, follower = pty.openpty()
    screen = bytearray()

    def drain() -> None:  # the window's output, read so that it never blocks
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:
                return
            if not data:
                return
            screen.extend(data)

    reader = threading.Thread(target=drain, daemon=True)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=follower,
            stdout=follower,
            stderr=follower,
            cwd=tmp_path,
            env=env,
            start_new_session=True,
        )
        reader.start()
        try:
            proc.wait(timeout=60)
        finally:
            proc.kill()
            proc.wait()
    finally:
        os.close(follower)
        reader.join(timeout=5)
        os.close(leader)
    assert proc.returncode == 0, bytes(screen[-2000:]).decode(errors="replace")
    seen = json.loads(report.read_text())
    assert seen["playgrounds"] == [] and "mm-playground" not in seen["threads"]
    folder = Path(seen["cwd"])
    assert folder.parent == temp and folder.name.startswith(PLAYGROUND_PREFIX)
    assert (folder / "greet.py").is_file() and seen["now"] == seen["cwd"]
