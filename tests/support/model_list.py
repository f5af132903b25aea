"""A server of several models for `/model`'s tests: the scripted server serving as LM Studio,
whose list (GET /api/v0/models) gives each model a window of its own (the scripted server's own
list gives every model the same one)."""

from __future__ import annotations

from typing import Any

from support.scripted_server import ScriptedServer

MODELS = ("small-coder", "big-coder", "other")
WINDOWS = {"small-coder": 4096, "big-coder": 32768, "other": 8192}


def lmstudio_routes(
    models: tuple[str, ...] = MODELS, windows: dict[str, int] | None = None
) -> dict[tuple[str, str], Any]:
    """LM Studio's GET /api/v0/models, each model loaded with its window (2,048 when unnamed)."""
    windows = windows or WINDOWS
    data = [
        {
            "id": model,
            "object": "model",
            "type": "llm",
            "state": "loaded",
            "max_context_length": windows.get(model, 2048),
            "loaded_context_length": windows.get(model, 2048),
        }
        for model in models
    ]
    return {("GET", "/api/v0/models"): {"object": "list", "data": data}}


def model_server(
    *script: Any, models: tuple[str, ...] = MODELS, windows: dict[str, int] | None = None
) -> ScriptedServer:
    """The server, refusing no request for its size (its context is far above the windows)."""
    return ScriptedServer(
        *script,
        models=models,
        serves="lmstudio",
        context_window=65536,
        routes=lmstudio_routes(models, windows),
    )


async def open_model_list(pilot: Any, app: Any, count: int) -> None:
    """`/model` typed in the window, until its list shows `count` models."""
    from textual.widgets import OptionList

    from mm_tui.window.screens.models import ModelsScreen
    from support.waiting import until

    await pilot.press(*"/model", "enter")
    await until(
        lambda: (
            isinstance(app.screen, ModelsScreen)
            and app.screen.query(OptionList)
            and app.screen.query_one(OptionList).option_count == count
        ),
        "the list of models",
        pilot=pilot,
    )
