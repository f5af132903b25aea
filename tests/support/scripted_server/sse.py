"""The SSE builders: `chat.completion.chunk` objects as a server streams them (text, reasoning,
tool calls in pieces, the finish and the usage), and their framing as SSE events, byte for
byte."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

DEFAULT_MODEL = "scripted-model"


# --------------------------------------------------------------------------- chunk builders


def split_text(text: str, split: int | None) -> list[str]:
    """Pieces of `split` characters each (the whole text when `split` is None or 0)."""
    if not split or split <= 0 or len(text) <= split:
        return [text]
    return [text[i : i + split] for i in range(0, len(text), split)]


def chunk(delta: dict[str, Any] | None = None, finish_reason: str | None = None) -> dict[str, Any]:
    """One `chat.completion.chunk` with a single choice; the server fills in id, model, created."""
    return {"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}]}


def role_chunk() -> dict[str, Any]:
    """The opening chunk most servers send: the role and an empty content."""
    return chunk({"role": "assistant", "content": ""})


def text_chunks(text: str, split: int | None = None) -> list[dict[str, Any]]:
    """`delta.content` pieces of `split` characters (one chunk when `split` is None)."""
    return [chunk({"content": piece}) for piece in split_text(text, split)]


def reasoning_chunks(
    text: str, split: int | None = None, field: str = "reasoning_content"
) -> list[dict[str, Any]]:
    """Reasoning pieces; `field` is "reasoning_content" (DeepSeek, vLLM, llama.cpp) or
    "reasoning" (Ollama, OpenRouter)."""
    return [chunk({field: piece}) for piece in split_text(text, split)]


def tool_call_chunks(
    id: str | None,
    name: str,
    arguments: str | dict[str, Any],
    split: int | None = 1,
    index: int = 0,
) -> list[dict[str, Any]]:
    """One tool call the way OpenAI streams it: a first piece with id, type and name (and empty
    arguments), then the arguments in pieces of `split` characters. `id=None` leaves the id out,
    as some servers do."""
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    first: dict[str, Any] = {"index": index, "type": "function"}
    if id is not None:
        first["id"] = id
    first["function"] = {"name": name, "arguments": ""}
    out = [chunk({"tool_calls": [first]})]
    if arguments:
        for piece in split_text(arguments, split):
            out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    return out


def finish_chunk(reason: str | None = "stop") -> dict[str, Any]:
    return chunk({}, reason)


def usage_chunk(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    """The extra last chunk that `stream_options.include_usage` asks for: no choices, usage."""
    return {
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def interleave(*lists: Sequence[Any]) -> list[Any]:
    """Round-robin merge, for tool calls whose pieces arrive interleaved across indexes."""
    out: list[Any] = []
    longest = max((len(seq) for seq in lists), default=0)
    for i in range(longest):
        for seq in lists:
            if i < len(seq):
                out.append(seq[i])
    return out


def _full_chunk(obj: dict[str, Any], model: str) -> dict[str, Any]:
    if "choices" in obj and "object" not in obj:
        return {
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            **obj,
        }
    return obj


def encode_sse(
    chunks: Iterable[dict[str, Any] | str | bytes],
    done: bool = True,
    model: str = DEFAULT_MODEL,
    crlf: bool = False,
) -> list[bytes]:
    """Each chunk as one SSE event (`data: ...` and a blank line): a dict as JSON, a str as the
    data payload verbatim, bytes as they are. One element per event, then `data: [DONE]`."""
    events = []
    for item in chunks:
        if isinstance(item, bytes):
            events.append(item)
            continue
        payload = item if isinstance(item, str) else json.dumps(_full_chunk(item, model))
        events.append(f"data: {payload}\n\n".encode())
    if done:
        events.append(b"data: [DONE]\n\n")
    if crlf:
        events = [e.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n") for e in events]
    return events


def split_bytes(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    """`data` cut at the given offsets (out-of-range and repeated offsets are ignored)."""
    points = sorted({c for c in cuts if 0 < c < len(data)})
    out, start = [], 0
    for p in points:
        out.append(data[start:p])
        start = p
    out.append(data[start:])
    return out
