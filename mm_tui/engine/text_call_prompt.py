"""Tool calls for a server that refuses tool declarations: the tools described in the system
prompt, with the Hermes form to call them in (`<tool_call>{"name": …, "arguments": {…}}
</tool_call>`, which engine/text_calls.py reads), and the history sent in that same form.

Such a server refuses a request with `tools`, and often one whose history holds structured
calls or `tool` messages too (its chat template knows neither). So the request goes without
`tools`, the system message gains the description, an assistant message's calls are written
into its text in the form described, and a tool's result goes as a user message in
`<tool_response>` tags, as Hermes' template writes it. The journal keeps the history as it
was: only the copy sent changes. Each converted message is made once and kept (the request
body encodes each message once: engine/request_body.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

TEXT_CALL_FORM = (
    "\n\nThis server takes no tool declarations, so call tools in your reply's text. To call a "
    "tool, write\n"
    '<tool_call>{"name": "TOOL_NAME", "arguments": {ARGUMENTS AS JSON}}</tool_call>\n'
    "one such block per call, and nothing after your calls: the results come back in the next "
    "message, in <tool_response> tags. Without a call, answer in plain text. The tools:"
)


def describe_text_calls(tools: Sequence[dict[str, Any]]) -> str:
    """The description appended to the system prompt: the form, then each tool on a line, its
    description and its parameters' JSON schema."""
    lines = [TEXT_CALL_FORM]
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict):
            continue
        schema = json.dumps(function.get("parameters") or {}, ensure_ascii=False)
        about = str(function.get("description") or "").strip()
        lines.append(f"- {function.get('name')}: {about} Parameters: {schema}")
    return "\n".join(lines)


class TextCallHistory:
    """The history as a server without tools is sent it (see the module's docstring). Without
    `tools` (a model spoken to in chat only), the system message's text goes as `plain` makes
    it (as it is without `plain`) and the calls of the history still go as text."""

    def __init__(self) -> None:
        self._made: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
        self._system: tuple[dict[str, Any], str, dict[str, Any]] | None = None

    def messages(
        self,
        messages: list[dict[str, Any]],
        tools: Sequence[dict[str, Any]],
        plain: Callable[[str], str] | None = None,
    ) -> list[dict[str, Any]]:
        made: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
        out = []
        for n, message in enumerate(messages):
            if n == 0 and message.get("role") == "system" and (tools or plain is not None):
                content = message.get("content")
                text = content if isinstance(content, str) else ""
                if tools:
                    text += describe_text_calls(tools)
                elif plain is not None:
                    text = plain(text)
                out.append(message if text == content else self._sent_system(message, text))
                continue
            hit = self._made.get(id(message))
            if hit is None or hit[0] is not message:
                hit = (message, as_text(message))
            made[id(message)] = hit
            out.append(hit[1])
        self._made = made
        return out

    def _sent_system(self, first: dict[str, Any], text: str) -> dict[str, Any]:
        """The system message with `text`, the same copy while they are the same."""
        kept = self._system
        if kept is None or kept[0] is not first or kept[1] != text:
            kept = self._system = (first, text, {**first, "content": text})
        return kept[2]


def as_text(message: dict[str, Any]) -> dict[str, Any]:
    """One message without structured calls: an assistant's calls written into its text, a
    tool's result as a user message."""
    role = message.get("role")
    if role == "tool":
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        return {"role": "user", "content": f"<tool_response>\n{text}\n</tool_response>"}
    calls = message.get("tool_calls")
    if role != "assistant" or not calls:
        return message
    written = []
    for call in calls:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except ValueError:
            arguments = function.get("arguments")
        text = json.dumps(
            {"name": function.get("name"), "arguments": arguments}, ensure_ascii=False
        )
        written.append(f"<tool_call>{text}</tool_call>")
    before = message.get("content")
    parts = ([before] if isinstance(before, str) and before else []) + written
    return {"role": "assistant", "content": "\n".join(parts)}
