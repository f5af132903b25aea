"""What a model server's refusals say, in words for a person: the server's own message dug out
of its error body, the wording of an HTTP status with the hint that fixes it, and whether the
refusal means that the conversation no longer fits the model's context.

Apart from the HTTP client because three callers word the same refusals (a streamed answer, a
whole JSON answer, the list of models), and without httpx so that the chunk assembler, which
words an error event inside a stream, stays free of any I/O."""

from __future__ import annotations

import json
import re

from mm_tui.engine.model_stream import CONTEXT_ADVICE, ModelError

__all__ = [
    "CONTEXT_WORDS",
    "context_overflow",
    "reported_error",
    "server_error_text",
    "status_message",
]

# How servers say that the conversation no longer fits the model's context: OpenAI and vLLM
# ("maximum context length", code context_length_exceeded), llama.cpp ("exceeds the available
# context size", exceed_context_size_error), LM Studio and Ollama ("context length", "context
# window", "too many tokens"). Such an error is not retried: only a shorter history helps.
CONTEXT_WORDS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context size",
    "context window",
    "exceed_context",
    "too many tokens",
    "prompt is too long",
)


def context_overflow(text: str) -> bool:
    """Whether the server refused the request as longer than the model's context: the engine
    shortens the history and asks again instead of retrying the same request."""
    lowered = text.lower()
    return any(word in lowered for word in CONTEXT_WORDS)


def server_error_text(body: bytes) -> str:
    """The server's own words: OpenAI's {"error": {"message"}} and its common variants; of an
    HTML page (a web server that is no model server), its title and text without the tags."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        if text[:1] == "<":
            return _html_words(text)[:500]
        return text[:500]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            for key in ("message", "detail", "msg"):
                if isinstance(err.get(key), str):
                    return err[key]
            if isinstance(data.get("detail"), str):
                return data["detail"]
        elif isinstance(err, str):
            return err
    return text[:500]


def _html_words(page: str) -> str:
    """An HTML error page's words on one line: what Python's http.server, nginx or a web app
    answer to a request they do not serve. `html` is imported here: its entity table, 1 ms
    on the way to ready, is for such a page only."""
    import html

    body = re.sub(r"(?is)<(script|style|head)\b.*?</\1>", " ", page)
    words = re.sub(r"<[^>]*>", " ", body)
    return " ".join(html.unescape(words).split())


NOT_A_MODEL_SERVER = (404, 405, 501)
"""Statuses with which a web server that is no model server refuses a POST: said so."""


def status_message(base_url: str, model: str, status: int, reason: str, body: bytes) -> str:
    """An HTTP error status with the server's words and, for the statuses a person can fix,
    what to change."""
    said = server_error_text(body)
    msg = f"the model server answered {status} {reason}".rstrip()
    if said:
        msg += f": {said}"
    page = body.lstrip()[:1] == b"<"
    if status in NOT_A_MODEL_SERVER and page:
        msg += (
            f" (a web page, not an OpenAI-compatible answer: {base_url} does not look like a "
            "model server's API; check baseUrl, which usually ends in /v1)"
        )
    elif status in (401, 403):
        msg += " (check apiKey, MM_API_KEY or OPENAI_API_KEY)"
    elif status == 404:
        msg += f" (check baseUrl {base_url}" + (f" and model {model!r})" if model else ")")
    elif context_overflow(said):
        msg += f" — {CONTEXT_ADVICE}"
    elif status == 413:
        msg += " (the request is too large for the server: /compact shortens the conversation)"
    return msg


def reported_error(body: bytes, *, after_tokens: bool = False) -> ModelError:
    """An error the server reported with a 200: an error event inside a stream, or an error
    object as the whole answer. A context overflow after part of the answer was shown is not
    one the engine may shrink and ask again for: the person has seen the start of an answer."""
    said = server_error_text(body)
    overflow = context_overflow(said)
    if overflow:
        said += f" — {CONTEXT_ADVICE}"
    return ModelError(
        "the model server reported an error: " + said,
        after_tokens=after_tokens,
        overflow=overflow and not after_tokens,
        server_text=body.decode("utf-8", errors="replace"),
    )
