"""JSON as small models write it in a tool call they put in their text, and the check of its
values against a tool's JSON schema (engine/text_calls.py uses both).

A model that writes its call as text makes the mistakes a person typing JSON makes: single
quotes, a trailing comma, Python's True and None, a string cut off by the end of the reply,
an object given as a JSON string. `loads` repairs those and nothing else: what is still not
JSON after the repairs is not a call. `conform` checks a value against a schema and repairs
only what is unambiguous ("3" for an integer, "true" for a boolean, an array sent as text);
anything else fails, since a call invented from prose is worse than a call missed. No I/O."""

from __future__ import annotations

import json
import re
from typing import Any

FAIL: Any = object()
"""What `loads` and `conform` return for a value that is not what was asked."""

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LITERALS = {"True": "true", "False": "false", "None": "null"}
_INTEGER = re.compile(r"\s*-?\d+\s*")
_NUMBER = re.compile(r"\s*-?\d+(\.\d+)?([eE][-+]?\d+)?\s*")
_CLOSERS = {"{": "}", "[": "]"}


def loads(text: str) -> Any:
    """The JSON value of `text`, repaired if need be; FAIL when it is not one."""
    try:
        return json.loads(text, strict=False)
    except ValueError:
        pass
    try:
        return json.loads(_repaired(text), strict=False)
    except ValueError:
        return FAIL


def value_end(text: str, start: int) -> int:
    """Where the JSON object or array that opens at `start` closes (the index after it), or
    the end of `text` when it never closes (a reply cut off)."""
    end = value_close(text, start)
    return len(text) if end < 0 else end


def value_close(text: str, start: int) -> int:
    """Where the JSON object or array that opens at `start` closes (the index after it), -1
    while it is open; strings in either quote are skipped."""
    depth = 0
    i, n = start, len(text)
    while i < n:
        ch = text[i]
        if ch == '"' or ch == "'":
            i = _string_end(text, i)
            continue
        if ch == "{" or ch == "[":
            depth += 1
        elif ch == "}" or ch == "]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def _string_end(text: str, start: int) -> int:
    """The index after the string that opens at `start` (the end of `text` if unclosed)."""
    quote = text[start]
    i, n = start + 1, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == quote:
            return i + 1
        i += 1
    return n


def _repaired(text: str) -> str:
    """`text` as strict JSON: strings in double quotes, no trailing commas, JSON's literals for
    Python's, and what the end of the reply left open closed."""
    out: list[str] = []
    stack: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"' or ch == "'":
            end = _string_end(text, i)
            out.append(_double_quoted(text[i:end]))
            i = end
            continue
        if ch.isalpha() or ch == "_":
            word = _WORD.match(text, i)
            assert word is not None
            out.append(_LITERALS.get(word.group(), word.group()))
            i = word.end()
            continue
        if ch in _CLOSERS:
            stack.append(_CLOSERS[ch])
        elif ch == "}" or ch == "]":
            _drop_trailing_comma(out)
            if stack:
                stack.pop()
        out.append(ch)
        i += 1
    _drop_trailing_comma(out)
    out.extend(reversed(stack))
    return "".join(out)


def _double_quoted(piece: str) -> str:
    """A string in either quote, maybe unclosed, as a JSON string in double quotes."""
    quote = piece[0]
    body = piece[1:-1] if len(piece) > 1 and piece.endswith(quote) else piece[1:]
    if body.endswith("\\") and not body.endswith("\\\\"):
        body = body[:-1]  # cut off in the middle of an escape
    if quote == "'":
        body = body.replace("\\'", "'")
        body = re.sub(r'(?<!\\)((?:\\\\)*)"', r'\1\\"', body)
    return f'"{body}"'


def _drop_trailing_comma(out: list[str]) -> None:
    for k in range(len(out) - 1, -1, -1):
        if out[k].isspace():
            continue
        if out[k] == ",":
            del out[k]
        return


# -- the schema ---------------------------------------------------------------------------------


def conform(value: Any, schema: Any) -> Any:
    """`value` as `schema` wants it (the few unambiguous repairs made), or FAIL. A schema mm
    cannot read (no type, a `$ref`) accepts the value as it is: the tool's own validation
    answers the model then, as for any call."""
    if not isinstance(schema, dict):
        return value
    if "enum" in schema and value not in schema["enum"]:
        return FAIL
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return _any_of(value, schema[key])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _any_of(value, [{**schema, "type": one} for one in kind])
    if kind == "object" or (kind is None and "properties" in schema):
        return _object(value, schema)
    if kind == "array":
        return _array(value, schema)
    scalar = _SCALARS.get(kind)  # type: ignore[arg-type]
    return value if scalar is None else scalar(value)


def _any_of(value: Any, schemas: list[Any]) -> Any:
    for schema in schemas:
        result = conform(value, schema)
        if result is not FAIL:
            return result
    return FAIL


def _object(value: Any, schema: dict[str, Any]) -> Any:
    """An object with every required key, no key the schema does not know (unless it allows
    more), each value conformed."""
    if isinstance(value, str):
        value = loads(value)
    if not isinstance(value, dict):
        return FAIL
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    if isinstance(required, list) and any(key not in value for key in required):
        return FAIL
    extra = schema.get("additionalProperties", not properties)
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in properties:
            item = conform(item, properties[key])
        elif not extra:
            return FAIL
        elif isinstance(extra, dict):
            item = conform(item, extra)
        if item is FAIL:
            return FAIL
        out[key] = item
    return out


def _array(value: Any, schema: dict[str, Any]) -> Any:
    if isinstance(value, str):
        value = loads(value)
    if not isinstance(value, list):
        return FAIL
    items = schema.get("items")
    out = [conform(item, items) for item in value]
    return FAIL if any(item is FAIL for item in out) else out


def _string(value: Any) -> Any:
    return value if isinstance(value, str) else FAIL


def _integer(value: Any) -> Any:
    if isinstance(value, bool):
        return FAIL
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        return int(value)
    return FAIL


def _number(value: Any) -> Any:
    if isinstance(value, bool):
        return FAIL
    if isinstance(value, int | float):
        return value
    if isinstance(value, str) and _NUMBER.fullmatch(value):
        number = float(value)
        return int(number) if _INTEGER.fullmatch(value) else number
    return FAIL


def _boolean(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return FAIL


def _null(value: Any) -> Any:
    return None if value is None else FAIL


_SCALARS = {
    "string": _string,
    "integer": _integer,
    "number": _number,
    "boolean": _boolean,
    "null": _null,
}
