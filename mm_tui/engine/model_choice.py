"""`/model`: the models the session's server offers, with the context window known of each, and
the switch to another one in the middle of a session.

The list is the server's own `GET /models` (OpenAI, Ollama, LM Studio, vLLM, llama.cpp all answer
it); each model's window is asked the way start-up asks it for one model
(`context_window.read_context_window`: llama.cpp's /props, Ollama's /api/show, vLLM's and LM
Studio's lists, the table of hosted models), a few at a time and only for the first
WINDOWS_ASKED models, so that a hosted server's list of a hundred costs no more than a moment.

A switch keeps the conversation: the requests from then on go to the new model on the same server.
It is recorded in the journal (a `model` record: a resumed session goes on with it), the new
model's window is learned, and when the conversation no longer fits it the history is compacted
at once, by the new model, rather than refused at the next request."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mm_tui.core.events import Event, ModelChanged
from mm_tui.core.frozen import frozen
from mm_tui.engine.model_stream import ModelError

if TYPE_CHECKING:  # (a name only: the engine does not import this module)
    from mm_tui.engine.turn import Engine

__all__ = [
    "WINDOWS_ASKED",
    "OfferedModel",
    "offered_ids",
    "offered_models",
    "choose_model",
    "model_lines",
    "switch_model",
    "unknown_model",
]

WINDOWS_ASKED = 24  # models whose window is asked; the rest of a long list shows none
ASKED_AT_ONCE = 4


@frozen
class OfferedModel:
    """A model the server offers, and its context window in tokens when the server says it."""

    id: str
    window: int | None = None


async def offered_models(client: Any) -> list[OfferedModel]:
    """The models `client`'s server offers, in its order. The demo model offers itself. Raises
    `ModelError` when the server cannot be asked or answers with no list."""
    base_url = getattr(client, "base_url", "")
    if not base_url or getattr(client, "read_context_window", None) is None:
        return [OfferedModel(client.model)]
    api_key = getattr(client, "api_key", None)
    from mm_tui.engine.context_window import read_context_window
    from mm_tui.engine.servers import list_models

    ids = await list_models(base_url, api_key)
    gate = asyncio.Semaphore(ASKED_AT_ONCE)

    async def window(model: str) -> int | None:
        async with gate:
            found = await read_context_window(base_url, model, api_key=api_key)
        return found.tokens if found is not None else None

    windows = await asyncio.gather(*(window(model) for model in ids[:WINDOWS_ASKED]))
    return [
        OfferedModel(model, windows[n] if n < len(windows) else None) for n, model in enumerate(ids)
    ]


async def offered_ids(client: Any, timeout: float = 5.0) -> list[str]:
    """The names alone (one request): what the prompt completes after `/model `."""
    base_url = getattr(client, "base_url", "")
    if not base_url or getattr(client, "read_context_window", None) is None:
        return [client.model]
    from mm_tui.engine.servers import list_models

    return await list_models(base_url, getattr(client, "api_key", None), timeout)


def unknown_model(name: str, ids: list[str]) -> str | None:
    """What to say when `name` is not among the models offered (None when it is): the names
    that come closest, so that a typo is one look away."""
    if name in ids:
        return None
    close = [model for model in ids if name.lower() in model.lower()][:5]
    hint = f" — did you mean {', '.join(close)}?" if close else " — /model lists them"
    return f"the server offers no model {name}{hint}"


async def choose_model(engine: Engine, name: str, emit: Callable[[Event], None]) -> list[str]:
    """`/model NAME`: switch once the server is known to offer `name` (a server that cannot
    list its models is taken at its word). Returns the notes of `switch_model`; raises
    `ModelError` with what to say when it offers no such model, or while a turn runs."""
    try:
        offered = await offered_ids(engine.client)
    except ModelError:
        offered = None
    problem = unknown_model(name, offered) if offered else None
    if problem is not None:
        raise ModelError(problem)
    return await switch_model(engine, name, emit)


def model_lines(models: list[OfferedModel], current: str) -> list[str]:
    """The list as line mode prints it: the model in use marked, each window when known."""
    return [
        f"{'*' if model.id == current else ' '} {model.id}"
        + (f"  (context {model.window:,} tokens)" if model.window else "")
        for model in models
    ]


async def switch_model(engine: Engine, name: str, emit: Callable[[Event], None]) -> list[str]:
    """Send the requests from now on to `name`: recorded, its window learned, the history
    compacted when it no longer fits. Returns the notes that say what was learned. Raises
    `ModelError` while a turn runs (the front ends queue the command behind it)."""
    if engine.busy:
        raise ModelError("a turn is running: the model changes once it has ended")
    emit = engine.redacting(emit)  # a server's words in a compaction's error can quote the key
    client = engine.client
    previous = client.model
    if name == previous:
        return [f"already on {name}"]
    client.model = name
    engine.recorder.save(emit, lambda: engine.session.switch_model(name, previous))
    engine.context.meter.forget_base()  # the last request's count was another tokenizer's
    emit(ModelChanged(model=name, previous=previous, provider=client.provider))
    notes = await engine.learn_context_window()
    usage = engine.context_usage()
    if usage is not None and usage.window and usage.used > usage.window:
        notes.append(
            f"the conversation ({usage.used:,} tokens) does not fit {name}'s context "
            f"({usage.window:,}): compacting it"
        )
        await engine.compact(emit)
    engine.context.report(emit)
    return notes
