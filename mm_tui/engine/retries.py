"""What a failed request to the model server means for the next try: the server's hint of how
long to wait (`retry_after`), a failure a new try may mend (`Retryable`: a 5xx, a 429, a
dropped or stale connection, a server not there), a streamed 200 with no event at all
(`EmptyAnswer`); which statuses are retried (`check_status`), what a stream cut or left
unfinished means (`cut_stream`, `unfinished_stream`), how long to wait before the next try
(`retry_delay`) and the words of giving up (`gave_up`). The provider tries again; this says
what happened and how long to wait."""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING

from mm_tui.engine.model_stream import ModelError
from mm_tui.engine.server_errors import context_overflow, status_message
from mm_tui.engine.servers import connection_problem

if TYPE_CHECKING:
    import httpx

    from mm_tui.engine.chunk_assembly import ChunkAssembler
    from mm_tui.engine.sse import SseDecoder


def retry_after(value: str | None, milliseconds: str | None = None) -> float | None:
    """The server's hint in seconds: `retry-after-ms` (OpenAI's, in milliseconds) when present,
    else `Retry-After` in seconds or as an HTTP date; None for anything else, and the caller
    falls back to exponential backoff."""
    if milliseconds:
        try:
            delay = float(milliseconds) / 1000
            if delay == delay and delay >= 0:  # not NaN
                return delay
        except ValueError:
            pass
    if not value:
        return None
    try:
        delay = float(value)
        return max(0.0, delay) if delay == delay and delay != float("inf") else None
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime  # here: rarely needed, slow to import

    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


class Retryable(Exception):
    """A failure that a new try may mend (a 5xx, a 429, a dropped connection), raised inside
    the provider only: it becomes a `Retrying` chunk, or a `ModelError` once the tries are spent."""

    def __init__(
        self,
        message: str,
        status: int | None = None,
        retry_after: float | None = None,
        hint: str = "",
    ):
        super().__init__(message)
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.hint = hint
        self.stale = False  # a kept-alive connection the server had closed: retry at once
        self.unreachable = False  # no connection could be made: the server is not there

    @classmethod
    def connection(cls, base_url: str, exc: BaseException) -> Retryable:
        import httpx  # loaded already: `exc` is one of its errors

        message, hint = connection_problem(base_url, exc)
        retryable = cls(message, hint=hint)
        # Read or write failed on a connection that was open: most often one the server closed
        # while it sat in the pool (llama-cpp-python closes the connection of its empty 200,
        # though it said keep-alive). The first retry goes at once, on a new connection.
        retryable.stale = isinstance(
            exc, httpx.ReadError | httpx.WriteError | httpx.RemoteProtocolError
        )
        retryable.unreachable = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
        return retryable


class EmptyAnswer(Exception):
    """A streamed request answered with a 200 and not one event: see "llama-cpp-python"."""


DROPPED = "the model server closed the stream in the middle of the answer"


def retry_delay(
    attempt: int, error: Retryable, replaced: bool, backoff: float, max_retry_after: float
) -> float:
    """How long to wait after the failed try number `attempt` (from 0). A stale pooled
    connection (`replaced` False: not done yet for this request) is replaced at once; a
    server's hint is followed up to `max_retry_after`; else exponential backoff with jitter."""
    if error.stale and not replaced:
        return 0.0
    if error.retry_after is not None:
        return min(error.retry_after, max_retry_after)
    base = backoff * (2**attempt)
    return base + random.uniform(0, base / 2)


def gave_up(error: Retryable, attempts: int) -> ModelError:
    """The error that ends an answer once the tries are spent, saying how many there were."""
    msg = error.message
    if attempts > 1:
        if error.hint and msg.endswith(")"):  # "(connection refused; gave up after 5 tries)"
            msg = msg[:-1] + f"; gave up after {attempts} tries)"
        else:
            msg += f" (gave up after {attempts} tries)"
    if error.hint:
        msg += f". {error.hint}"
    return ModelError(msg, status=error.status, unreachable=error.unreachable)


async def check_status(resp: httpx.Response, base_url: str, model: str) -> None:
    """Nothing for a success; else `Retryable` for a status a new try may mend (408, 425, 429,
    most 5xx, with the server's wait), `ModelError` for the rest and for a context overflow
    (some servers say it with a 500: retrying cannot help)."""
    status = resp.status_code
    if status < 300:
        return
    body = await resp.aread()
    msg = status_message(base_url, model, status, resp.reason_phrase, body)
    if context_overflow(msg):
        said = body.decode("utf-8", errors="replace")
        raise ModelError(msg, status=status, overflow=True, server_text=said)
    if status in (408, 425, 429) or (status >= 500 and status not in (501, 505)):
        headers = resp.headers
        delay = retry_after(headers.get("retry-after"), headers.get("retry-after-ms"))
        raise Retryable(msg, status, delay)
    raise ModelError(msg, status=status)


def cut_stream(exc: httpx.RequestError, answer: ChunkAssembler, base_url: str) -> Retryable | None:
    """The connection failed while the answer streamed. None when the answer is whole
    anyway (it has its finish_reason); raises when a retry would show a second answer."""
    if answer.finish is not None:
        return None
    detail = str(exc) or type(exc).__name__
    if answer.calls:  # cut while a tool call was composed: ask again
        return Retryable(f"{DROPPED}, in a tool call ({detail})")
    if answer.yielded:
        raise ModelError(f"{DROPPED} ({detail})", after_tokens=True) from None
    return Retryable.connection(base_url, exc)


def unfinished_stream(sse: SseDecoder, answer: ChunkAssembler, base_url: str) -> Exception:
    """What a stream that ended with neither [DONE] nor a finish_reason means: a
    `Retryable`; an `EmptyAnswer` when it said nothing at all; a `ModelError` when a retry
    would show a second answer, or cannot help."""
    if answer.calls:
        return Retryable(f"{DROPPED}, in a tool call")
    if answer.yielded:
        return ModelError(DROPPED, after_tokens=True)
    if sse.seen_data:
        return Retryable(f"the model server at {base_url} closed the stream before answering")
    stray = sse.stray
    if stray is not None and not stray.startswith(("event:", "id:", "retry:")):
        return ModelError(
            f"the model server at {base_url} did not answer with "
            f"server-sent events: {stray[:200]!r}"
        )
    return EmptyAnswer()
