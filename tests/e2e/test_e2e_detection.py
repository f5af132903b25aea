"""1. Detection: with baseUrl unset, mm finds the real llama.cpp server through the presets, lists
its model and names both in the banner and the window's header."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from e2e_helpers import settings_for, window
from llama_server import LlamaServer, port_is_free
from rich.console import Console
from support.program import mm
from support.scripted_server import closed_port_url
from support.window_helpers import settle

from mm_tui.engine.servers import PRESETS, Preset, detect_local_server
from mm_tui.engine.turn import UNKNOWN_WINDOW
from mm_tui.line.printer import banner
from mm_tui.startup import start
from mm_tui.window.widgets.agent_header import AgentHeader


def presets_with(server: LlamaServer) -> tuple[Preset, ...]:
    """The preset table as a test gives it: a dead Ollama first, then llama.cpp on the port the
    session's server listens on."""
    return (Preset("Ollama", closed_port_url()), Preset("llama.cpp", server.base_url))


async def test_detection_lists_the_model_and_names_it_in_the_banner(server, project: Path):
    settings = settings_for(project)
    assert settings.base_url is None and settings.model is None
    found = await detect_local_server(presets=presets_with(server))
    assert found is not None
    assert (found.name, found.base_url) == ("llama.cpp", server.base_url)
    assert found.models == (server.model_id,)

    started = await start(settings, project, presets=presets_with(server))
    try:
        client = started.engine.client
        # llama-cpp-python says its window only in a refusal: mm says it will learn it there.
        assert not started.on_demo and started.notes == [UNKNOWN_WINDOW]
        assert (client.provider, client.model, client.base_url) == (
            "llama.cpp",
            server.model_id,
            server.base_url,
        )
        out = io.StringIO()
        banner(Console(file=out, width=500, color_system=None), started.engine, started.notes)
        first = out.getvalue().splitlines()[0]
        assert first.startswith(f"mm [mm] · {server.model_id} @ llama.cpp")
    finally:
        await started.engine.aclose()


async def test_detection_names_the_model_in_the_window_header(server, project: Path):
    app = window(project, presets=presets_with(server))
    async with app.run_test(size=(250, 30)) as pilot:
        await settle(pilot, app, timeout=30)
        header = app.screen.query_one(AgentHeader)
        assert (header.title_text, header.model, header.provider) == (
            "mm",
            server.model_id,
            "llama.cpp",
        )
        shown = header.render().plain
        assert shown.startswith(f" mm [mm] · {server.model_id} @ llama.cpp ")


async def test_mm_line_finds_the_server_on_the_llama_cpp_port(project: Path, tmp_path: Path):
    """The real program, no flags, no baseUrl: the server on llama.cpp's own port, 8080."""
    (llama_cpp,) = [p for p in PRESETS if p.name == "llama.cpp"]
    port = int(llama_cpp.base_url.split(":")[2].split("/")[0])
    if not port_is_free(port):
        pytest.skip(f"port {port} is taken on this machine")
    earlier = PRESETS[: PRESETS.index(llama_cpp)]
    if await detect_local_server(presets=earlier) is not None:
        pytest.skip("a model server listens on a port probed before llama.cpp's")
    with LlamaServer(port=port, log=tmp_path / "llama-8080.log") as on_preset:
        result = mm("--line", cwd=project, stdin="/quit\n", timeout=60)
    assert result.returncode == 0, result.stderr
    assert f"mm [mm] · {on_preset.model_id} @ llama.cpp" in result.stdout.splitlines()[0]
    assert "demo model" not in result.stdout
