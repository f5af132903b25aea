"""The context window a scripted server enforces: its count of a request's tokens, and the
refusal each kind of server really sends when a request does not fit."""

from __future__ import annotations

import json
import math
from typing import Any

# --------------------------------------------------------------------------- context window

CONTEXT_STYLES = ("llama-cpp-python", "llama.cpp", "vllm", "openai", "lmstudio")
SERVES = ("llama.cpp", "ollama", "vllm", "lmstudio")


def _compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def scripted_prompt_tokens(body: Any) -> int:
    """The prompt's size in this server's tokens: the compact JSON of `messages` (and of `tools`
    when the request has some), in characters, divided by 4, rounded up. Deterministic, so a test
    can build a request of a known size."""
    if not isinstance(body, dict):
        return 0
    text = _compact(body.get("messages") or [])
    if body.get("tools"):
        text += _compact(body["tools"])
    return math.ceil(len(text) / 4)


def scripted_text_tokens(text: str) -> int:
    """A text's tokens by the same rule, for POST /tokenize: its characters divided by 4,
    rounded up."""
    return math.ceil(len(text) / 4)


def _requested_output(body: Any) -> int | None:
    if not isinstance(body, dict):
        return None
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def scripted_tokens(body: Any) -> int:
    """The whole request: `scripted_prompt_tokens(body)` plus the output it asks room for
    (`max_completion_tokens` or `max_tokens`, when set)."""
    return scripted_prompt_tokens(body) + (_requested_output(body) or 0)


def context_error(style: str, window: int, body: Any) -> tuple[int, Any] | None:
    """The status and body a server of `style` answers a request that does not fit in `window`
    tokens, or None when it fits."""
    prompt = scripted_prompt_tokens(body)
    output = _requested_output(body)
    if style == "llama-cpp-python":
        # llama_cpp/llama.py raises "Requested tokens (P) exceed context window of N" when
        # P >= N; llama_cpp/server/errors.py turns it into this (max_tokens as the request had it).
        if prompt < window:
            return None
        message = (
            f"This model's maximum context length is {window} tokens. "
            f"However, you requested {prompt + (output or 0)} tokens "
            f"({prompt} in the messages, {output} in the completion). "
            "Please reduce the length of the messages or completion."
        )
        return 400, {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        }
    if style == "llama.cpp":
        # tools/server/server-context.cpp (send_error, ERROR_TYPE_EXCEED_CONTEXT_SIZE) and
        # server_task_result_error::to_json, which adds n_prompt_tokens and n_ctx.
        if prompt < window:
            return None
        message = (
            f"request ({prompt} tokens) exceeds the available context size "
            f"({window} tokens), try increasing it"
        )
        return 400, {
            "error": {
                "code": 400,
                "message": message,
                "type": "exceed_context_size_error",
                "n_prompt_tokens": prompt,
                "n_ctx": window,
            }
        }
    if style == "vllm":
        # vllm/renderers/params.py: the prompt is tokenized with truncation one token past the
        # room left, hence "at least"; the error is a VLLMValidationError (its str() appends the
        # parameter) sent as ErrorResponse(error=ErrorInfo(...)).
        out = output or 0
        if prompt + out <= window:
            return None
        seen = max(window - out + 1, 1)
        message = (
            f"This model's maximum context length is {window} tokens. However, you requested "
            f"{out} output tokens and your prompt contains at least {seen} input tokens, for a "
            f"total of at least {seen + out} tokens. Please reduce the length of the input "
            f"prompt or the number of requested output tokens. "
            f"(parameter=input_tokens, value={seen})"
        )
        return 400, {
            "error": {
                "message": message,
                "type": "BadRequestError",
                "param": "input_tokens",
                "code": 400,
            }
        }
    if style == "openai":
        if prompt + (output or 0) <= window:
            return None
        if output:
            message = (
                f"This model's maximum context length is {window} tokens. However, you "
                f"requested {prompt + output} tokens ({prompt} in the messages, {output} in the "
                "completion). Please reduce the length of the messages or completion."
            )
        else:
            message = (
                f"This model's maximum context length is {window} tokens. However, your "
                f"messages resulted in {prompt} tokens. Please reduce the length of the messages."
            )
        return 400, {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        }
    if style == "lmstudio":
        if prompt < window:
            return None
        message = (
            f"Trying to keep the first {prompt} tokens when context the overflows. However, the "
            f"model is loaded with context length of only {window} tokens, which is not enough. "
            "Try to load the model with a larger context length, or provide a shorter input"
        )
        return 400, {"error": message}
    raise ValueError(f"unknown context_style {style!r}")
