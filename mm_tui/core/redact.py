"""Keep the api key out of everything mm shows and writes.

A tool can print the key: the model runs `echo $MM_API_KEY`, or `cat`s the config file that holds
it. Tool output goes to the history (and so to the session file and back to the model) and to the
screen, so the engine passes it through its `Redactor` where it enters both. The session journal
is the last guard (for a key the person pasted into a prompt, say): it looks for a key in each
line it is about to write (`in_json`) and, only when there is one, writes it through `data`.

The known secrets are given: the api keys the configuration read (every layer's, even one a later
layer overrode: it is still a secret, and `cat` shows it), plus the values of `MM_API_KEY` and
`OPENAI_API_KEY`, which a tool's environment carries even when the settings took the key from a
file. Each occurrence becomes `[redacted]`. There is no process-wide list: whoever holds the
settings builds the redactor (the engine, for itself and its session).

A value shorter than MIN_LENGTH characters is left alone: local servers take placeholder keys
such as `ollama`, `EMPTY` or `none`, which are no secret, and replacing every `ollama` in a
conversation about Ollama would garble it; a real key is far longer.

A base URL can carry a key too (`https://user:KEY@host/v1`, `…/v1?api_key=KEY`): `url_secrets`
names those parts, which the settings add to their secrets, and `clean_url` is the URL without
them, what a session file keeps and a person is shown.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

MARK = "[redacted]"
MIN_LENGTH = 8
ENV_VARIABLES = ("MM_API_KEY", "OPENAI_API_KEY")


class Redactor:
    """Replaces known secrets. `keys`: the secrets the caller knows (None and short values are
    ignored); `environ`: where the two key variables are read (the process's by default)."""

    def __init__(
        self, keys: Iterable[str | None] = (), environ: Mapping[str, str] | None = None
    ) -> None:
        environ = os.environ if environ is None else environ
        found = {key for key in keys if key}
        found.update(environ.get(name, "") for name in ENV_VARIABLES)
        # longest first, so that a key that holds another is replaced whole
        self.secrets: tuple[str, ...] = tuple(
            sorted((s for s in found if len(s) >= MIN_LENGTH), key=len, reverse=True)
        )
        self._forms = tuple(
            {
                json.dumps(s, ensure_ascii=a)[1:-1].encode()
                for s in self.secrets
                for a in (True, False)
            }
        )

    def text(self, text: str) -> str:
        """`text` with every known secret replaced by MARK."""
        if not text:
            return text
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, MARK)
        return text

    def in_json(self, payload: bytes) -> bool:
        """Whether a known secret appears in a JSON document, as JSON escapes it (with or
        without `ensure_ascii`): a search at the speed of bytes, so that the usual save, with no
        secret in it, costs no walk through the history."""
        return any(form in payload for form in self._forms)

    def data(self, data: Any) -> Any:
        """A copy of a JSON-like structure (dicts, lists, strings) with every string redacted;
        the same object when nothing in it holds a secret."""
        if not self.secrets:
            return data
        return _walk(data, self.secrets)


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


# A query parameter whose name says it is a credential: `api_key`, `key`, `token`,
# `access_token`, `secret`, `password`, `pwd`, `auth`, `sig` (a signed URL's). Compiled by `re`
# at its first use: the demo model has no URL to read.
CREDENTIAL_PARAMETER = r"(?i)key|token|secret|pass|pwd|credential|auth|sig"


def _split_authority(url: str) -> tuple[str, str, str, str]:
    """(scheme and `://`, userinfo, host and port, the rest: path, query, fragment). A URL
    without a scheme (`user:KEY@host/v1`, refused as a base URL, in words that quote it) is
    read as starting with its authority."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    end = len(rest)
    for mark in "/?#":
        found = rest.find(mark)
        if found != -1:
            end = min(end, found)
    authority, tail = rest[:end], rest[end:]
    userinfo, at, host = authority.rpartition("@")
    return scheme + sep, userinfo if at else "", host if at else authority, tail


def _query_items(tail: str) -> tuple[str, list[str], str]:
    """(path, the query's `name=value` items, `#fragment` or "") of a URL's tail."""
    tail, hash_, fragment = tail.partition("#")
    path, _, query = tail.partition("?")
    return path, query.split("&") if query else [], hash_ + fragment


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The secrets `url` carries: the password of its userinfo (the user name when it comes
    alone: `https://KEY@host` is how some servers take a token) and the Basic authorization
    made of it, and the value of each query parameter whose name says credential, as written
    and percent-decoded."""
    if not url:
        return ()
    found: list[str] = []
    _, userinfo, _, tail = _split_authority(url)
    if userinfo:
        user, colon, password = userinfo.partition(":")
        found.extend((password, unquote(password)) if colon else (user, unquote(user)))
        # what goes on the wire: the HTTP client sends the userinfo as Basic authorization,
        # and a server that echoes the header echoes this
        basic = f"{unquote(user)}:{unquote(password)}".encode()
        found.append(base64.b64encode(basic).decode("ascii"))
    _, items, _ = _query_items(tail)
    for item in items:
        name, eq, value = item.partition("=")
        if eq and value and re.search(CREDENTIAL_PARAMETER, unquote(name)):
            found.extend((value, unquote(value)))
    return tuple(dict.fromkeys(s for s in found if s))


def clean_url(url: str | None) -> str | None:
    """`url` fit to be stored and shown: without its userinfo (`user:password@`), and with the
    value of each query parameter whose name says credential replaced by MARK; anything else
    as written (None and a URL without either come back unchanged)."""
    if not url:
        return url
    scheme, _, host, tail = _split_authority(url)
    head = scheme + host
    path, items, fragment = _query_items(tail)
    kept = []
    for item in items:
        name, eq, value = item.partition("=")
        if eq and value and re.search(CREDENTIAL_PARAMETER, unquote(name)):
            item = f"{name}={MARK}"
        kept.append(item)
    query = "?" + "&".join(kept) if kept else ("?" if "?" in tail.partition("#")[0] else "")
    return head + path + query + fragment
