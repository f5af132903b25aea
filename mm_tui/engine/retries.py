"""What a failed request to the model server means for the next try: the server's hint of how
long to wait (`retry_after`), a failure a new try may mend (`Retryable`: a 5xx, a 429, a
dropped or stale connection, a server not there), and a streamed 200 with no event at all
(`EmptyAnswer`). The provider decides when to try again; this says what happened."""

from __future__ import annotations

import time

from mm_tui.engine.servers import connection_problem


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
