"""Keep the api key out of everything mm shows and writes.

A tool can print the key: the model runs `echo $MM_API_KEY`, or `cat`s the config file that holds
it. Tool output goes to the history (and so to the session file and back to the model) and to the
screen, so the engine passes it through `redact` where it enters both. `Session.save` is the last
guard (for a key the person pasted into a prompt, say): it looks for a key in the file it is about
to write (`in_json`) and, only when there is one, writes the history through `redact_data`.

The known secrets are the api key of the settings (config file, `--config`, `MM_API_KEY`,
`OPENAI_API_KEY`) and the values of those two variables, which a tool's environment carries even
when the settings took the key from a file. Each occurrence becomes `[redacted]`.

A value shorter than MIN_LENGTH characters is left alone: local servers take placeholder keys
such as `ollama`, `EMPTY` or `none`, which are no secret, and replacing every `ollama` in a
conversation about Ollama would garble it; a real key is far longer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mm_tui.config import Settings

MARK = "[redacted]"
MIN_LENGTH = 8
ENV_VARIABLES = ("MM_API_KEY", "OPENAI_API_KEY")

_remembered: set[str] = set()  # keys of the settings seen in this process


def remember(key: Any) -> None:
    """Note a key (a str, a pydantic SecretStr, or settings and their api key), so that saving a
    session hides it too. The configuration remembers every key it reads, even one that a later
    layer overrides: it is still a secret, and `cat` shows it."""
    if key is not None and not isinstance(key, str) and hasattr(key, "api_key"):
        key = key.api_key
    if key is None:
        return
    value = key.get_secret_value() if hasattr(key, "get_secret_value") else str(key)
    if len(value) >= MIN_LENGTH:
        _remembered.add(value)


def secrets(
    settings: Settings | None = None, environ: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """Every known secret long enough to redact, longest first (so that a key that holds another
    is replaced whole)."""
    remember(settings)
    environ = os.environ if environ is None else environ
    found = set(_remembered)
    found.update(environ.get(name, "") for name in ENV_VARIABLES)
    return tuple(sorted((s for s in found if len(s) >= MIN_LENGTH), key=len, reverse=True))


def redact(text: str, settings: Settings | None = None) -> str:
    """`text` with every known secret replaced by MARK."""
    if not text:
        return text
    for secret in secrets(settings):
        if secret in text:
            text = text.replace(secret, MARK)
    return text


def in_json(payload: bytes, settings: Settings | None = None) -> bool:
    """Whether a known secret appears in a JSON document, as JSON escapes it (with or without
    `ensure_ascii`): a search at the speed of bytes, so that the usual save, with no secret in
    it, costs no walk through the history."""
    forms = {json.dumps(s, ensure_ascii=a)[1:-1] for s in secrets(settings) for a in (True, False)}
    return any(form.encode() in payload for form in forms)


def redact_data(data: Any, settings: Settings | None = None) -> Any:
    """A copy of a JSON-like structure (dicts, lists, strings) with every string redacted; the
    same object when nothing in it holds a secret."""
    known = secrets(settings)
    if not known:
        return data
    return _walk(data, known)


def _walk(data: Any, known: tuple[str, ...]) -> Any:
    if isinstance(data, str):
        for secret in known:
            if secret in data:
                data = data.replace(secret, MARK)
        return data
    if isinstance(data, dict):
        out = {key: _walk(value, known) for key, value in data.items()}
        return data if all(out[k] is data[k] for k in data) else out
    if isinstance(data, list):
        items = [_walk(value, known) for value in data]
        return data if all(a is b for a, b in zip(items, data, strict=True)) else items
    return data
