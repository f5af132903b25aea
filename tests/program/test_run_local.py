"""`make run-local` without its model server: the folder mm works in, and what it is told of the
server (tests/e2e/llama_server.py, which the end-to-end tests run for real)."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

from mm_tui.config import load_settings

ROOT = Path(__file__).resolve().parents[2]


def script():  # noqa: ANN201 - the module
    spec = importlib.util.spec_from_file_location(
        "llama_server", ROOT / "tests/e2e/llama_server.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mm_is_told_the_server_s_context_window(tmp_path: Path) -> None:
    """The server starts with a 2,048-token window, which llama.cpp's server does not report:
    mm is told it, so that the header shows `ctx N / 2,048`; a window the person set wins."""
    env = script().command_environment(2048, {"PATH": "/usr/bin"})
    assert env["MM_CONTEXT_WINDOW"] == "2048" and env["MM_PROVIDER"] == "llama.cpp"
    settings = load_settings(cwd=tmp_path, environ=env, home=tmp_path)
    assert settings.context_window == 2048
    mine = script().command_environment(2048, {"MM_CONTEXT_WINDOW": "4096"})
    assert mine["MM_CONTEXT_WINDOW"] == "4096"


def test_run_local_works_in_a_playground_not_in_the_clone() -> None:
    """The small model's mm runs in a throw-away playground, as the demo does."""
    dry = subprocess.run(
        ["make", "-n", "run-local"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert dry.returncode == 0, dry.stderr
    commands = dry.stdout[dry.stdout.index("make_playground") :]
    assert 'cd "$playground"' in commands
    assert commands.index('cd "$playground"') < commands.index("llama_server.py")
