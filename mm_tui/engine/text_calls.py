"""Tool calls a model wrote in its answer's text instead of as structured calls.

Small local models, or a server whose chat template does not turn the model's call into the
API's `tool_calls`, leave the call in the text, in the form the model was trained on:

- Qwen3-Coder: `<tool_call><function=NAME><parameter=KEY>value</parameter></function></tool_call>`
  (the outer tags often missing);
- Hermes (and Qwen2.5/3): `<tool_call>{"name": …, "arguments": {…}}</tool_call>`;
- Mistral: `[TOOL_CALLS][{"name": …, "arguments": {…}}]`, and the newer
  `[TOOL_CALLS]NAME[ARGS]{…}`;
- Llama 3: `<|python_tag|>{"name": …, "parameters": {…}}`, and the bare JSON object its
  templates ask for;
- a JSON object of that shape alone in the reply, or alone in a fenced block.

`find_calls` returns the calls and the text left over, or None. A call counts only for a
declared tool, with arguments that check against its schema after lenient repairs
(`loose_json`); when anything is in doubt it returns None, and the reply stays an answer: a
call invented from an answer that quotes JSON could run a command. No I/O."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from mm_tui.core.frozen import frozen
from mm_tui.engine.loose_json import FAIL, conform, loads, value_end

MARKERS = ("<tool_call>", "<function=", "[TOOL_CALLS]", "<|python_tag|>")
"""The special strings that open a call in the forms above (the stream gate watches them)."""

_CALL_KEYS = frozenset({"name", "arguments", "parameters", "id", "type", "function"})
_TAGGED = re.compile(r"<tool_call>|<function=")
_PARAMETER = re.compile(r"<parameter=([^>\n]+)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.S)
_MISTRAL_NAME = re.compile(r"\s*([A-Za-z0-9_.\-]+)\s*(?:\[CALL_ID\]\s*[^\[\s]*\s*)?\[ARGS\]")
_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w-]*)[ \t]*\n(.*?)(?:\n[ \t]*```[ \t]*$|\Z)", re.S | re.M)
_FENCE_LINE = re.compile(r"^[ \t]*```", re.M)
_FENCE_LANGUAGES = ("", "json", "json5", "tool_call", "tool_code")

Schemas = dict[str, Any]


@frozen
class TextCall:
    """A call read from the text: the tool's name and its arguments, checked."""

    name: str
    arguments: dict[str, Any]


@frozen
class FoundCalls:
    """The calls of a reply, in order, and its text without them (what stays an answer)."""

    calls: tuple[TextCall, ...]
    rest: str


def find_calls(text: str, tools: Sequence[dict[str, Any]]) -> FoundCalls | None:
    """The calls `text` holds in one of the forms above, for the declared `tools` (the
    request's declarations); None when it holds none, or one that does not check."""
    if not text or not tools:
        return None
    schemas = declared_schemas(tools)
    for form in _FORMS:
        found = form(text, schemas)
        if found is not None:
            return found if found.calls else None
    return None


def declared_schemas(tools: Sequence[dict[str, Any]]) -> Schemas:
    """Each declared tool's name and its parameters' schema."""
    out: Schemas = {}
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            out[function["name"]] = function.get("parameters") or {"type": "object"}
    return out


def _checked(name: Any, arguments: Any, schemas: Schemas) -> TextCall | None:
    """The call when `name` is declared and `arguments` conform to its schema."""
    if not isinstance(name, str) or name.strip() not in schemas:
        return None
    name = name.strip()
    schema = schemas[name]
    if not isinstance(schema, dict) or not schema:
        schema = {"type": "object"}
    args = conform(arguments, {"type": "object", **schema})
    return None if args is FAIL else TextCall(name, args)


def _from_object(value: Any, schemas: Schemas) -> TextCall | None:
    """A call from `{"name": …, "arguments" | "parameters": …}` (or OpenAI's own shape, the
    same under "function"); None for any other object."""
    if not isinstance(value, dict) or not value.keys() <= _CALL_KEYS:
        return None
    function = value.get("function")
    if isinstance(function, dict):
        return _from_object(function, schemas) if "name" not in value else None
    if "arguments" in value and "parameters" in value:
        return None
    arguments = value.get("arguments", value.get("parameters", FAIL))
    if arguments is FAIL:
        return None
    return _checked(value.get("name"), arguments, schemas)


def _from_json(text: str, schemas: Schemas) -> list[TextCall] | None:
    """The calls of a JSON object or a list of them; None if any is not a call."""
    value = loads(text.strip())
    items = value if isinstance(value, list) else [value]
    if not items:
        return None
    calls = [_from_object(item, schemas) for item in items]
    return None if any(call is None for call in calls) else calls  # type: ignore[return-value]


def _joined(before: str, after: str) -> str:
    before, after = before.rstrip(), after.strip()
    return f"{before}\n\n{after}" if before and after else before or after


# -- the forms --------------------------------------------------------------------------------


def _tagged(text: str, schemas: Schemas) -> FoundCalls | None:
    """`<tool_call>…</tool_call>` blocks (JSON or Qwen3-Coder's `<function=…>` inside) and
    bare `<function=…>…</function>` blocks, one after another; an unclosed last one runs to
    the end of the reply."""
    start = _TAGGED.search(text)
    if start is None:
        return None
    at = start.start()
    calls: list[TextCall] = []
    while True:
        at = len(text) - len(text[at:].lstrip())
        if text.startswith("<tool_call>", at):
            inner, at = _until(text, at + len("<tool_call>"), "</tool_call>")
            call = _function(inner, schemas) if inner.lstrip().startswith("<function=") else None
            found = [call] if call is not None else _from_json(_unfenced(inner), schemas)
        elif text.startswith("<function=", at):
            inner, at = _until(text, at, "</function>")
            call = _function(inner, schemas)
            found = [call] if call is not None else None
            if text[at:].lstrip().startswith("</tool_call>"):
                at = text.index("</tool_call>", at) + len("</tool_call>")
        else:
            break
        if not found:
            return FoundCalls((), "")
        calls.extend(found)
    return FoundCalls(tuple(calls), _joined(text[: start.start()], text[at:]))


def _unfenced(text: str) -> str:
    """The JSON of a `<tool_call>` block that a model put in a fenced block as well."""
    fence = _FENCE.fullmatch(text.strip())
    return text if fence is None else fence.group(2)


def _until(text: str, start: int, closing: str) -> tuple[str, int]:
    """The text from `start` to `closing` (or to the end), and where the rest begins."""
    end = text.find(closing, start)
    if end < 0:
        return text[start:], len(text)
    return text[start:end], end + len(closing)


def _function(block: str, schemas: Schemas) -> TextCall | None:
    """Qwen3-Coder's `<function=NAME>` block: each `<parameter=KEY>` value read as the tool's
    schema types it (a string as written, anything else as JSON)."""
    block = block.strip()
    head = re.match(r"<function=([^>\n]+)>", block)
    if head is None:
        return None
    name = head.group(1).strip()
    schema = schemas.get(name)
    if schema is None:
        return None
    properties = schema.get("properties") if isinstance(schema, dict) else None
    properties = properties if isinstance(properties, dict) else {}
    body = block[head.end() :]
    body = body[: body.rfind("</function>")] if "</function>" in body else body
    arguments = {}
    for match in _PARAMETER.finditer(body):
        key = match.group(1).strip()
        arguments[key] = _parameter_value(match.group(2), properties.get(key))
    return _checked(name, arguments, schemas)


def _parameter_value(raw: str, schema: Any) -> Any:
    """A Qwen3-Coder parameter's text as its schema's type: its template writes strings as
    they are and other values as JSON (or Python's `True`)."""
    value = raw[1:] if raw.startswith("\n") else raw
    value = value[:-1] if value.endswith("\n") else value
    kind = schema.get("type") if isinstance(schema, dict) else None
    if kind == "string":
        return value
    if kind in ("integer", "number", "boolean", "null"):
        return value.strip()
    parsed = loads(value)
    return value if parsed is FAIL else parsed


def _mistral(text: str, schemas: Schemas) -> FoundCalls | None:
    """`[TOOL_CALLS]` then a JSON list of calls, or `NAME[ARGS]{…}` once or more."""
    start = text.find("[TOOL_CALLS]")
    if start < 0:
        return None
    at = start
    calls: list[TextCall] = []
    while text.startswith("[TOOL_CALLS]", at):
        at += len("[TOOL_CALLS]")
        found, at = _mistral_calls(text, at, schemas)
        if found is None:
            return FoundCalls((), "")
        calls.extend(found)
        at = len(text) - len(text[at:].lstrip())
    return FoundCalls(tuple(calls), _joined(text[:start], text[at:]))


def _mistral_calls(text: str, at: int, schemas: Schemas) -> tuple[list[TextCall] | None, int]:
    stripped = len(text) - len(text[at:].lstrip())
    if text.startswith(("[", "{"), stripped):
        end = value_end(text, stripped)
        return _from_json(text[stripped:end], schemas), end
    named = _MISTRAL_NAME.match(text, at)
    if named is None:
        return None, at
    opening = len(text) - len(text[named.end() :].lstrip())
    end = value_end(text, opening) if text.startswith("{", opening) else len(text)
    call = _checked(named.group(1), loads(text[opening:end]), schemas)
    return (None if call is None else [call]), end


def _python_tag(text: str, schemas: Schemas) -> FoundCalls | None:
    """Llama 3's `<|python_tag|>` then one JSON call or several (`;` between them)."""
    start = text.find("<|python_tag|>")
    if start < 0:
        return None
    body = text[start + len("<|python_tag|>") :].replace("<|eom_id|>", "").replace("<|eot_id|>", "")
    calls = _json_run(body, schemas)
    if calls is None:
        return FoundCalls((), "")
    return FoundCalls(tuple(calls), text[:start].rstrip())


def _json_run(body: str, schemas: Schemas) -> list[TextCall] | None:
    """Calls as JSON objects (or lists of them) one after another, `;` or blank between, and
    nothing else."""
    calls: list[TextCall] = []
    at, n = 0, len(body)
    while True:
        while at < n and (body[at].isspace() or body[at] == ";"):
            at += 1
        if at == n:
            return calls or None
        if body[at] not in "{[":
            return None
        end = value_end(body, at)
        found = _from_json(body[at:end], schemas)
        if found is None:
            return None
        calls.extend(found)
        at = end


def _bare(text: str, schemas: Schemas) -> FoundCalls | None:
    """The whole reply one JSON call or more (Llama 3's templates ask for exactly this)."""
    body = text.strip()
    if not body.startswith(("{", "[")):
        return None
    calls = _json_run(body, schemas)
    return None if calls is None else FoundCalls(tuple(calls), "")


def _fenced(text: str, schemas: Schemas) -> FoundCalls | None:
    """The reply's only fenced block (```json or unnamed), when it holds nothing but calls."""
    if len(_FENCE_LINE.findall(text)) > 2:
        return None
    fence = _FENCE.search(text)
    if fence is None or fence.group(1).lower() not in _FENCE_LANGUAGES:
        return None
    calls = _json_run(fence.group(2), schemas)
    if calls is None:
        return None
    return FoundCalls(tuple(calls), _joined(text[: fence.start()], text[fence.end() :]))


_FORMS: tuple[Callable[[str, Schemas], FoundCalls | None], ...] = (
    _tagged,
    _mistral,
    _python_tag,
    _fenced,
    _bare,
)
