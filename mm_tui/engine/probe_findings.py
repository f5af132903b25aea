"""What the model probe found out about a model on its server (engine/model_probe.py), what that
means for how mm asks it, and the lines that say so.

Each finding is "yes", "no" or "unknown": a probe that could not tell (a timeout, an odd answer)
says "unknown" and mm then asks as it always does. Only definite findings change anything:

- tool calls that do not survive streaming (`streamed_calls` "no": llama-cpp-python's empty
  200, an error) make requests with tools go non-streamed from the first one;
- tools the server refuses (`tools` "no") make mm describe a textual call format in the system
  prompt and send no `tools` (engine/text_call_prompt.py), unless the model, asked so, wrote
  no call mm could read (`text_calls` "no"): then chat only, and one line says why.
"""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any, Literal

from mm_tui.core.frozen import frozen

Finding = Literal["yes", "no", "unknown"]
FINDINGS = ("yes", "no", "unknown")
STATUSES = ("done", "timed out", "unreachable", "failed")
REASONING = ("reasoning_content", "reasoning", "none", "unknown")
Asking = Literal["tools", "text calls", "chat only"]

PROBE_BOUND = 10.0  # seconds: the whole probe, at most
PROBE_HEADER = "X-MM-Probe"
"""Sent with every probe request, and only with those: a real server ignores it, the tests'
scripted server answers such requests apart from its script."""


@frozen
class ProbeFindings:
    """One probe's answers. `status`: "done", "timed out", "unreachable" or "failed", with
    `reason` saying why when not done (what was found before stays). `tools`: the server takes
    tool declarations; `streamed_calls`: it streams tool calls; `several_calls`: the model made
    more than one call in one reply; `calls_in_text`: it wrote its call in the text though tools
    were declared; `text_calls`: with tools refused, it wrote the described textual call;
    `reasoning`: the field its thoughts come in ("none" when none came); `think_tags`: thoughts
    in `<think>` tags in the content; `tokens_per_second`: of one short answer."""

    status: str = "done"
    reason: str = ""
    chat: Finding = "unknown"
    tools: Finding = "unknown"
    streamed_calls: Finding = "unknown"
    several_calls: Finding = "unknown"
    calls_in_text: Finding = "unknown"
    text_calls: Finding = "unknown"
    reasoning: str = "unknown"
    think_tags: Finding = "unknown"
    window: int | None = None
    window_source: str = ""
    tokens_per_second: float | None = None
    elapsed: float = 0.0

    @property
    def asking(self) -> Asking:
        """How requests go: with `tools`, with calls described as text, or chat only."""
        if self.tools != "no":
            return "tools"
        return "chat only" if self.text_calls == "no" else "text calls"

    @property
    def unstreamed_tools(self) -> bool:
        """Requests with tools go non-streamed: the server loses streamed tool calls."""
        return self.tools != "no" and self.streamed_calls == "no"

    def change(self) -> str:
        """The one line that says how the probe changed the way mm asks, or "" when it did not."""
        if self.asking == "chat only":
            return (
                "chat only: the server refuses tools, and the model wrote no tool call mm could "
                "read from its text"
            )
        if self.asking == "text calls":
            return (
                "the server refuses tools: they are described in the system prompt, and the "
                "calls read from the model's text"
            )
        if self.unstreamed_tools:
            return "requests with tools go non-streamed: the server loses streamed tool calls"
        return ""

    def lines(self) -> list[str]:
        """Each finding on a line of its own, as `mm --doctor` prints them (mm's own words:
        every value is one of a few known ones or a number)."""
        speed = self.tokens_per_second
        lines = [
            f"probe: {self.status} in {self.elapsed:.1f} s"
            + (f" ({self.reason})" if self.reason else ""),
            f"chat: {self.chat}",
            f"tools accepted: {self.tools}",
            f"tool calls streamed: {self.streamed_calls}",
            f"several calls in one reply: {self.several_calls}",
            f"tool calls written as text: {self.calls_in_text}",
        ]
        if self.tools == "no":
            lines.append(f"textual tool calls (described in the prompt): {self.text_calls}")
        lines += [
            f"reasoning field: {self.reasoning}",
            f"<think> tags in the content: {self.think_tags}",
            "context window: "
            + (f"{self.window:,} tokens ({self.window_source})" if self.window else "unknown"),
            "tokens per second: " + (f"{speed:.1f}" if speed is not None else "unknown"),
            f"how mm asks: {self.asking}"
            + ("" if self.asking != "tools" else ", non-streamed" if self.unstreamed_tools else ""),
        ]
        return lines

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: Any) -> ProbeFindings | None:
        """Findings read back from a file, checked field by field: None unless every field is
        there and one of the values it may have (a file is untrusted)."""
        if not isinstance(data, dict) or set(data) != {f.name for f in fields(cls)}:
            return None
        for name in ("chat", "tools", "streamed_calls", "several_calls", "calls_in_text"):
            if data[name] not in FINDINGS:
                return None
        if data["text_calls"] not in FINDINGS or data["think_tags"] not in FINDINGS:
            return None
        if data["status"] not in STATUSES or data["reasoning"] not in REASONING:
            return None
        if not _short_text(data["reason"]) or not _short_text(data["window_source"]):
            return None
        window = data["window"]
        if window is not None and not (type(window) is int and 0 < window < 1 << 40):
            return None
        if not _number(data["tokens_per_second"], optional=True):
            return None
        if not _number(data["elapsed"], optional=False):
            return None
        return cls(**data)


def _short_text(value: Any) -> bool:
    return isinstance(value, str) and len(value) <= 200 and value.isprintable()


def _number(value: Any, *, optional: bool) -> bool:
    if value is None:
        return optional
    return type(value) in (int, float) and math.isfinite(value) and 0 <= value < 1e9
