"""Plain HTTP to this machine: one HTTP/1.1 exchange on an asyncio stream.

Detection and the context-window lookup ask servers on this machine over plain http, a few
small JSON answers, on the way from the window's first frame to ready. A stand-in for httpx
there, which is slow to import and makes a TLS context such a request never uses (see
docs/performance.md): a request to a loopback http:// URL goes as one HTTP/1.1 exchange on an
asyncio stream, the connection closed after it; anything else (https, another host, which may
need the environment's proxy) goes through httpx. The model client itself always uses httpx.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]", "0.0.0.0"}


def is_loopback(base_url: str) -> bool:
    """A server on this machine: reached without the environment's proxy settings, since a
    proxy would not reach this machine's ports."""
    return (urlsplit(base_url).hostname or "").lower() in LOOPBACK


MAX_PLAIN_ANSWER = 16 * 1024 * 1024  # more is not the small JSON answer asked for


def plain_local(url: str) -> bool:
    """Whether `url` is plain http to this machine: `local_json` may ask it."""
    return url.lower().startswith("http://") and is_loopback(url)


async def local_json(
    url: str,
    *,
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = 2.0,
) -> tuple[int, Any]:
    """GET `url` (POST `body` as JSON when given) on a loopback http URL (`plain_local`): the
    status and the answer's JSON (None when a non-200 answer is not JSON). Raises OSError,
    TimeoutError, or ValueError for an answer that is not HTTP or a 200 that is not JSON."""
    status, content = await local_answer(url, body=body, headers=headers, timeout=timeout)
    try:
        return status, json.loads(content)
    except ValueError:
        if status == 200:
            raise
        return status, None


async def local_answer(
    url: str,
    *,
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = 2.0,
) -> tuple[int, bytes]:
    """As `local_json`, the answer's status and body as they came. Raises OSError, TimeoutError,
    or ValueError for an answer that is not HTTP."""
    parts = urlsplit(url)
    if parts.scheme.lower() != "http" or not parts.hostname:
        raise ValueError(f"not a plain http URL: {url}")
    request = _request(parts.path, parts.query, parts.netloc, body, headers)
    async with asyncio.timeout(timeout):
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port or 80)
        try:
            writer.write(request)
            await writer.drain()
            raw = await _answer(reader, url)
        finally:
            writer.close()
    return parse_http_answer(raw)


def _request(
    path: str, query: str, netloc: str, body: Any, headers: dict[str, str] | None
) -> bytes:
    """The request's bytes: GET, or POST with `body` as JSON; ValueError for a header that
    would smuggle in a line of its own."""
    target = (path or "/") + (f"?{query}" if query else "")
    lines = [
        f"{'GET' if body is None else 'POST'} {target} HTTP/1.1",
        f"Host: {netloc.rpartition('@')[2]}",  # without any user:password@
        "Accept: application/json",
        "Accept-Encoding: identity",
        "Connection: close",
    ]
    for name, value in (headers or {}).items():
        if any(c in f"{name}{value}" for c in "\r\n\0"):  # as httpx, no header smuggled in
            raise ValueError(f"a line break in the header {name}")
        lines.append(f"{name}: {value}")
    data = b""
    if body is not None:
        data = json.dumps(body, separators=(",", ":")).encode()
        lines += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data


async def _answer(reader: asyncio.StreamReader, url: str) -> bytes:
    """The answer's bytes: to the close (Connection: close), or to the end of the body its
    headers announce, for a server that keeps the connection open all the same."""
    pieces: list[bytes] = []
    size = 0
    while piece := await reader.read(65536):
        pieces.append(piece)
        size += len(piece)
        if size > MAX_PLAIN_ANSWER:
            raise ValueError(f"{url} answered with more than {MAX_PLAIN_ANSWER} bytes")
        if size < 1 << 20 and _complete(b"".join(pieces)):
            break
    return b"".join(pieces)


class ClosedUnanswered(ValueError):
    """The server closed the connection before the end of an answer's headers: nothing there
    speaks HTTP as a model server does, or it stopped mid-request."""


def parse_http_answer(raw: bytes) -> tuple[int, bytes]:
    """The status and the body of one HTTP/1.x answer read to the end of the connection
    (Content-Length, chunked, or up to the close). Raises ValueError."""
    head, sep, rest = raw.partition(b"\r\n\r\n")
    if not sep:
        raise ClosedUnanswered("the answer ended inside its headers")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    version, _, code = status_line.partition(" ")
    if not version.startswith("HTTP/1.") or not code[:3].isdigit():
        raise ValueError(f"not an HTTP answer: {status_line[:80]!r}")
    fields: dict[str, str] = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    if "chunked" in fields.get("transfer-encoding", "").lower():
        return int(code[:3]), _unchunk(rest)
    length = fields.get("content-length")
    if length is not None:
        n = int(length)
        if len(rest) < n:
            raise ValueError("the answer ended before its Content-Length")
        rest = rest[:n]
    return int(code[:3]), rest


def _complete(raw: bytes) -> bool:
    """Whether `raw` holds a whole answer by its headers' account (False when they do not say)."""
    head, sep, rest = raw.partition(b"\r\n\r\n")
    if not sep:
        return False
    lowered = head.lower()
    if b"transfer-encoding:" in lowered:
        if not rest.endswith(b"0\r\n\r\n"):
            return False
        try:
            _unchunk(rest)
        except ValueError:
            return False
        return True
    for line in lowered.split(b"\r\n"):
        if line.startswith(b"content-length:"):
            try:
                return len(rest) >= int(line.partition(b":")[2].strip())
            except ValueError:
                return False
    return False


def _unchunk(data: bytes) -> bytes:
    out = bytearray()
    pos = 0
    while True:
        end = data.find(b"\r\n", pos)
        if end < 0:
            raise ValueError("a chunked answer cut short")
        size = int(data[pos:end].split(b";", 1)[0].strip() or b"x", 16)
        if size == 0:
            return bytes(out)
        start = end + 2
        if len(data) < start + size:
            raise ValueError("a chunked answer cut short")
        out += data[start : start + size]
        pos = start + size + 2
