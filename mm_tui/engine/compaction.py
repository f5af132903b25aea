"""`/compact`, and the compaction that makes room when shortening old outputs is not enough: the
model summarises the conversation, and the summary, in the system message, replaces the
history (the turn's request goes on after it when it happens in the middle of a turn).

The summary is asked as the turn's requests ask the same server (engine/ask_style.py), with no
tool declared: to a server that refuses tools, the history's calls and their results go as text,
for such a server may refuse a request that holds them structured, and the compaction with it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from mm_tui.config import Settings
from mm_tui.core.events import Event, HistoryCompacted
from mm_tui.core.redact import Redactor
from mm_tui.engine.ask_style import AskStyle
from mm_tui.engine.context import ContextMeter, summary_request
from mm_tui.engine.model_stream import ModelClient, ModelError, TextChunk
from mm_tui.engine.recorder import SessionRecorder
from mm_tui.engine.turn_state import Emit

SUMMARY_QUESTION = (
    "Summarise this conversation so far for your own later use: the task, what was done, the "
    "files and facts that matter, and what is left to do. Be complete but brief; answer with the "
    "summary only."
)


class Keeper(Protocol):
    """What compaction needs of the context keeper (engine/context_keeper.py)."""

    recorder: SessionRecorder
    meter: ContextMeter
    asking: AskStyle
    client: ModelClient
    settings: Settings
    redactor: Redactor
    system_prompt: Callable[[], str]

    def tools(self) -> list[dict[str, Any]]: ...

    def report(self, emit: Emit | None) -> None: ...


async def compact(keeper: Keeper, emit: Emit | None = None, *, auto: bool = False) -> str:
    """The model summarises the conversation, and the summary replaces the history. Emits
    `HistoryCompacted` (and `ContextUsage`) through `emit`. Returns the summary; a failure
    raises with its words redacted."""
    try:
        return await _compact(keeper, emit, auto=auto)
    except ModelError as exc:
        if exc.message == (said := keeper.redactor.text(exc.message)):
            raise
        raise ModelError(said, status=exc.status) from None
    except Exception as exc:
        if str(exc) == (said := keeper.redactor.text(str(exc))):
            raise
        raise ModelError(said) from None


async def _compact(keeper: Keeper, emit: Emit | None, *, auto: bool) -> str:
    session = keeper.recorder.session
    messages = session.messages
    before = keeper.meter.estimate(messages, keeper.tools()) if keeper.meter.window else 0
    summary = await _summary(keeper, messages, emit)
    # In the system message, so that user and assistant turns still alternate afterwards.
    system = f"{keeper.system_prompt()}\n\nSummary of the conversation so far:\n\n{summary}"
    history: list[dict[str, Any]] = [{"role": "system", "content": system}]
    question = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    if auto and question is not None:  # in the middle of a turn: its request goes on
        history.append(question)
    replaced = len(messages)
    keeper.meter.forget_base()
    after = keeper.meter.estimate(history, keeper.tools()) if keeper.meter.window else 0
    session.compact(summary, history, auto=auto, tokens_before=before, tokens_after=after)
    if emit is not None:
        emit(
            HistoryCompacted(
                summary=summary,
                replaced=replaced,
                auto=auto,
                tokens_before=before,
                tokens_after=after,
            ),
        )
        keeper.report(emit)
    return summary


async def _summary(keeper: Keeper, messages: list[dict[str, Any]], emit: Emit | None) -> str:
    """The model's summary of `messages` (within four watchdog periods); ModelError when
    it gives none. The probe's findings are waited for first, as a turn's request does: a
    /compact may be the first request to the model."""
    text: list[str] = []
    ask = {"role": "user", "content": SUMMARY_QUESTION}
    await keeper.asking.settle(keeper.client, emit or _unheard)
    request, _ = keeper.asking.request(summary_request(keeper.meter, messages, ask), [])
    async with asyncio.timeout(keeper.settings.watchdog_timeout * 4):
        async for chunk in keeper.client.stream(request, []):
            if isinstance(chunk, TextChunk):
                text.append(chunk.text)
    summary = "".join(text).strip()
    if not summary:
        raise ModelError("the model gave an empty summary; the history is unchanged")
    return summary


def _unheard(event: Event) -> None:
    """Where the events of a compaction asked without a listener go."""
