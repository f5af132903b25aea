"""An in-process model for engine tests that need exact control of what the model says.

Model *traffic* (HTTP, SSE) is tested against the real scripted server; the turn loop's own logic
is tested here against the `ModelClient` interface it consumes, one response per round trip."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from mm_tui.core.events import Usage
from mm_tui.engine.model_stream import (
    ModelChunk,
    ModelError,
    StreamEnd,
    TextChunk,
    ToolCall,
    ToolCallChunk,
)


def say(text: str) -> list[ModelChunk]:
    return [TextChunk(text), StreamEnd("stop", usage=Usage(10, 5))]


def call(name: str, arguments: dict[str, Any] | str, call_id: str = "c1") -> list[ModelChunk]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return [
        ToolCallChunk(0, name, raw),
        StreamEnd("tool_calls", (ToolCall(call_id, name, raw),), Usage(10, 5)),
    ]


def calls(*items: tuple[str, dict[str, Any], str]) -> list[ModelChunk]:
    tool_calls = tuple(ToolCall(cid, name, json.dumps(args)) for name, args, cid in items)
    return [StreamEnd("tool_calls", tool_calls, Usage(10, 5))]


class ScriptedModel:
    model = "scripted"
    provider = "test"
    base_url = "test:scripted"

    def __init__(self, *responses: list[ModelChunk] | Exception | float) -> None:
        self.responses = list(responses)
        self.requests: list[list[dict[str, Any]]] = []

    async def aclose(self) -> None:
        return None

    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> AsyncIterator[ModelChunk]:
        self.requests.append(json.loads(json.dumps(messages)))
        response = self.responses.pop(0) if self.responses else say("done")
        if isinstance(response, Exception):
            raise response
        if isinstance(response, float):  # silence for that long
            await asyncio.sleep(response)
            return
        for chunk in response:
            if isinstance(chunk, ModelError):
                raise chunk
            await asyncio.sleep(0)
            yield chunk
