"""How the scripted server answers mm's model probe (mm_tui/engine/model_probe.py): requests
that carry the `X-MM-Probe` header never touch the script, are recorded in `probe_requests`
(chat completions) and `probe_lookups` (the `GET /models` of the fingerprint), never in
`requests`, `lookups` or `models_requests`, and get their answer from a `ProbeBehaviour`.

The default behaviour follows `serves`: every server it plays takes tools and streams tool
calls, so a probe changes nothing in how mm asks and no test that starts mm sees a difference.
`ProbeBehaviour.llama_cpp_python()` is that server's: an empty 200 for a streamed request with
tools."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .script import SSE, EmptyBody, Error, Received, Reply, Response, call

PROBE_HEADER = "x-mm-probe"


@dataclass
class ProbeBehaviour:
    """`tools`: "accepted" or "refused" (a 400 "… does not support tools", Ollama's words);
    `streamed_calls`: False answers a streamed request with tools with an empty 200;
    `several_calls`: two calls in one reply, else one; `calls_as_text`: the calls written in
    the text (Hermes form) instead of structured; `text_calls`: with the textual form described
    in the system prompt, the model writes a call in it; `reasoning`: None, "reasoning_content",
    "reasoning" or "think" (`<think>` tags in the content); `chat`: False refuses every request
    with a 500; `silent`: every probe chat request gets the headers and then nothing (until the
    server closes); `tool_choice`: False refuses a request that names `tool_choice` (a 400
    naming it); `completion_tokens`: the usage each answer reports; `fixed`: one answer for
    every probe chat request instead (a hostile server's)."""

    tools: str = "accepted"
    streamed_calls: bool = True
    several_calls: bool = True
    calls_as_text: bool = False
    text_calls: bool = True
    reasoning: str | None = None
    chat: bool = True
    silent: bool = False
    tool_choice: bool = True
    completion_tokens: int = 5
    fixed: Response | None = None

    @classmethod
    def for_server(cls, serves: str | None) -> ProbeBehaviour:
        """The behaviour of the server `serves` names (all of them take and stream tools)."""
        del serves
        return cls()

    @classmethod
    def llama_cpp_python(cls) -> ProbeBehaviour:
        return cls(streamed_calls=False)

    def answer(self, req: Received) -> Response:
        """The answer to one probe chat request."""
        if self.fixed is not None:
            return self.fixed
        if self.silent:
            return SSE([], silence_after=0)
        if not self.chat:
            return Error(500, "the model failed to load")
        if not self.tool_choice and "tool_choice" in req:
            return Error(400, "tool_choice: extra fields not permitted")
        if req.tools and self.tools == "refused":
            model = req.body.get("model") if isinstance(req.body, dict) else ""
            return Error(400, f"registry.ollama.ai/library/{model} does not support tools")
        if req.tools and req.stream and not self.streamed_calls:
            return EmptyBody()
        if req.tools:
            return self._calls()
        system = next((m for m in req.messages if m.get("role") == "system"), None)
        if system is not None and "<tool_call>" in str(system.get("content")):
            return self._reply(_hermes(1, 2) if self.text_calls else "I cannot call tools.")
        return self._reply("one two three four five")

    def _calls(self) -> Response:
        pairs = [(1, 2), (3, 4)] if self.several_calls else [(1, 2)]
        if self.calls_as_text:
            return self._reply("\n".join(_hermes(a, b) for a, b in pairs))
        calls = [call("probe_add", {"a": a, "b": b}) for a, b in pairs]
        return Reply(tool_calls=calls, usage=(20, self.completion_tokens))

    def _reply(self, text: str) -> Reply:
        usage = (20, self.completion_tokens)
        if self.reasoning == "think":
            return Reply(f"<think>Counting.</think>{text}", usage=usage)
        if self.reasoning:
            return Reply(text, reasoning="Counting.", reasoning_field=self.reasoning, usage=usage)
        return Reply(text, usage=usage)


def _hermes(a: int, b: int) -> str:
    body: dict[str, Any] = {"name": "probe_add", "arguments": {"a": a, "b": b}}
    return f"<tool_call>{json.dumps(body)}</tool_call>"
