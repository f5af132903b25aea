"""The request's JSON body: the model, the history, the tools and the options, and what this
server has refused of the options (`stream_options`, `tool_choice`), which it is never sent
again. The history is encoded a message at a time and each message once (a stand-in for
httpx's `json=`: see docs/performance.md)."""

from __future__ import annotations

import json
from typing import Any

from mm_tui.engine.model_stream import ModelError


class RequestBody:
    def __init__(self) -> None:
        self.usage_option = True  # False once the server has refused stream_options
        self.tool_choice = True  # False once the server has refused tool_choice
        self._encoded: dict[int, tuple[dict[str, Any], bytes]] = {}

    def make(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        stream: bool,
        choice: str | None = None,
        *,
        model: str,
        temperature: float | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "stream": stream,
        }
        if stream and self.usage_option:
            body["stream_options"] = {"include_usage": True}
        if tools:
            body["tools"] = tools
            if choice and self.tool_choice:
                body["tool_choice"] = choice
        if temperature is not None:
            body["temperature"] = temperature
        return body

    def encode(self, payload: dict[str, Any]) -> bytes:
        """The request's JSON body. The chat-completions protocol sends the whole history every
        time, encoded on the loop that also runs the window; a message never changes once in
        the history, so each is encoded once and the body is joined from the pieces (a stand-in
        for httpx's `json=`: see docs/performance.md)."""
        known = self._encoded
        encoded: dict[int, tuple[dict[str, Any], bytes]] = {}
        parts = []
        for message in payload["messages"]:
            key = id(message)
            hit = known.get(key)
            if hit is None or hit[0] is not message:
                hit = (message, json_bytes(sendable_message(message)))
            encoded[key] = hit
            parts.append(hit[1])
        self._encoded = encoded  # what left the history is forgotten
        rest = json_bytes({k: v for k, v in payload.items() if k != "messages"})
        head = rest[:-1] + b"," if len(rest) > 2 else b"{"
        return b"".join((head, b'"messages":[', b",".join(parts), b"]}"))

    def refused_tool_choice(self, exc: ModelError, payload: dict[str, Any]) -> bool:
        """A server that refuses `tool_choice` (400 naming it): True when the request should be
        sent again without it; it is never sent to this server again."""
        if exc.status == 400 and "tool_choice" in exc.message and "tool_choice" in payload:
            self.tool_choice = False
            payload.pop("tool_choice")
            return True
        return False

    def refused_option(self, exc: ModelError, payload: dict[str, Any]) -> bool:
        """A server that refuses a field mm can do without: True when the request should be
        sent again without it; it is never sent to this server again."""
        # stream_options only costs us the usage figures.
        if exc.status == 400 and "stream_options" in exc.message and self.usage_option:
            self.usage_option = False
            payload.pop("stream_options", None)
            return True
        return self.refused_tool_choice(exc, payload)


def sendable_message(message: dict[str, Any]) -> dict[str, Any]:
    """A message as sent: an assistant message with `content: null` gets `""` instead."""
    if message.get("content", "") is None and message.get("role") == "assistant":
        return {**message, "content": ""}
    return message


def json_bytes(data: Any) -> bytes:
    """Compact JSON, as httpx would encode it; a lone surrogate from a model goes as a \\u
    escape, which only ASCII-escaped JSON carries."""
    try:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:
        return json.dumps(data, separators=(",", ":")).encode()
