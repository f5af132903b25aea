"""What a model client yields while it answers: the common shape of the HTTP provider and the
demo model, so that the turn loop never knows which one it talks to."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import field
from typing import Any, Protocol

from mm_tui.core.events import Usage
from mm_tui.core.frozen import frozen


@frozen
class TextChunk:
    """A piece of the answer's text."""

    text: str


@frozen
class ReasoningChunk:
    """A piece of the model's reasoning (its thoughts), shown apart from the answer."""

    text: str


@frozen
class ToolCallChunk:
    """A piece of a tool call as it streams. `index` is the call's slot in the response (calls
    may interleave); `name` is the whole name once known; `arguments` is the text received so far
    for that call (cumulative, so a guard can look at it without keeping its own buffer)."""

    index: int
    name: str
    arguments: str


@frozen
class ToolCall:
    """A whole tool call: its id, the tool's name and the arguments as JSON text. `from_text`:
    the model wrote it in its answer's text, and mm read it from there (engine/text_calls.py)."""

    id: str
    name: str
    arguments: str  # raw JSON text, exactly as the model wrote it
    from_text: bool = False


@frozen
class StreamEnd:
    """The last item of every stream: the assembled tool calls, in index order."""

    finish_reason: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)


@frozen
class Retrying:
    """A request that failed before any answer, about to be sent again after `delay` seconds:
    said as it happens, so that a person watching a dead server sees why nothing comes instead
    of a bare spinner. `attempt` is the number of the try to come, of `attempts` in all;
    `unreachable` that the server did not answer at all (no connection), not an HTTP error."""

    attempt: int
    attempts: int
    delay: float
    reason: str
    unreachable: bool = False


ModelChunk = TextChunk | ReasoningChunk | ToolCallChunk | StreamEnd | Retrying


CONTEXT_ADVICE = (
    "the conversation no longer fits the model's context — /compact to shorten it, /new to "
    "start afresh, or load the model with a larger context (for example Ollama's num_ctx, "
    "llama.cpp's --ctx-size)"
)


class ModelError(Exception):
    """A failure of the model connection, already worded for a person. `after_tokens` tells
    whether some of the answer had arrived (then it is not retried); `overflow` that the server
    refused the request as larger than the model's context (the engine shrinks it and asks again)."""

    def __init__(
        self,
        message: str,
        *,
        after_tokens: bool = False,
        status: int | None = None,
        overflow: bool = False,
        server_text: str = "",
        unreachable: bool = False,
    ):
        super().__init__(message)
        self.message = message
        self.after_tokens = after_tokens
        self.status = status
        self.overflow = overflow  # the request did not fit the model's context
        self.server_text = server_text  # the server's own words (its error body), for the window
        self.unreachable = unreachable  # no connection to the server at all


class ModelClient(Protocol):
    """A chat-completions model: the HTTP provider or the demo model."""

    model: str
    provider: str
    base_url: str

    def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> AsyncIterator[ModelChunk]:
        """Yield chunks of one response; the last one is a `StreamEnd`. Raises `ModelError`."""
        ...

    async def aclose(self) -> None: ...
