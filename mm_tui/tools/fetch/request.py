"""Getting the page: one GET with httpx, redirects followed by hand so that robots.txt is asked
before the page and before every redirection target, within one deadline for everything.

As the reference (docs/tools.md) has it: `User-Agent: mm/<version>`; at most 10 redirections;
30 s for the whole fetch (robots.txt included); a page above 5 MiB is refused without reading
the rest; a status >= 300 after redirections, an unreachable host, a timeout, more redirections
or a robots.txt refusal are error 2 (input); not HTML and too large are error 1 (conversion).

The type is judged from the header before the body is read: a PDF is refused without
downloading it. A Content-Length above the limit is refused likewise; otherwise the body is
counted as it streams (after any gzip decoding, so that a small compressed body cannot unfold
into a huge page) and the connection closed at the first byte past the limit. A body compressed
in a way the request did not offer (brotli, when httpx has no brotli decoder) is refused by its
header, error 1, rather than read as bytes that are no text.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from dataclasses import dataclass

import httpx

from mm_tui import __version__
from mm_tui.tools.fetch.encoding import HTML_TYPES, looks_like_html, media_type
from mm_tui.tools.fetch.errors import CONVERSION, INPUT, FetchError
from mm_tui.tools.fetch.robots import (
    ALLOW_ALL,
    MAX_ROBOTS_BYTES,
    SHARED_CACHE,
    Robots,
    RobotsCache,
    origin_of,
)

USER_AGENT = f"mm/{__version__}"
MAX_BYTES = 5 * 1024 * 1024
MAX_REDIRECTS = 10
TIMEOUT = 30.0
_ROBOTS_REDIRECTS = 5
_REDIRECTS = (301, 302, 303, 307, 308)
# Content codings that compress (IANA's registry, and the x- forms still met).
_COMPRESSIONS = frozenset(
    "br zstd gzip x-gzip deflate compress x-compress bzip2 x-bzip2 xz lzma pack200-gzip".split()
)


@dataclass(frozen=True)
class Page:
    url: str  # after redirections
    content_type: str | None
    body: bytes


class _TooLarge(Exception):
    pass


async def _read(response: httpx.Response, limit: int) -> bytes:
    """The body, or _TooLarge as soon as it passes `limit` (the rest is never read)."""
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:  # compressed or not, the page is larger
        raise _TooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _unasked_compression(response: httpx.Response) -> str | None:
    """The compression of a body the request did not accept (`br` to a client without brotli),
    or None. httpx passes such a body through undecoded, which then reads as bytes that are not
    text; the real cause is worth its own message. Only compressions are judged: a server's
    nonsense such as `Content-Encoding: utf-8` is passed through as before, and the body is
    usually plain."""
    asked = {
        coding.strip().lower()
        for coding in response.request.headers.get("accept-encoding", "").split(",")
    }
    for coding in response.headers.get("content-encoding", "").split(","):
        coding = coding.strip().lower()
        if coding in _COMPRESSIONS and coding not in asked:
            return coding
    return None


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """httpx's own default context, built once: loading the certificate store costs tens of
    milliseconds, per client otherwise, and a fetch makes one client."""
    return httpx.create_ssl_context()


def _describe(exc: Exception) -> str:
    """An httpx exception in a few words: its message, or its kind when it has none."""
    text = str(exc).strip()
    return text or type(exc).__name__


class Fetcher:
    """One fetch: its client, its robots.txt cache and its deadline."""

    def __init__(
        self,
        *,
        timeout: float = TIMEOUT,
        robots: RobotsCache = SHARED_CACHE,
        max_bytes: int = MAX_BYTES,
        max_redirects: int = MAX_REDIRECTS,
    ) -> None:
        self.timeout = timeout
        self.robots = robots
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects

    async def fetch(self, url: str) -> Page:
        """The page at `url`, or FetchError."""
        try:
            async with asyncio.timeout(self.timeout):
                async with httpx.AsyncClient(
                    headers={"User-Agent": USER_AGENT},
                    follow_redirects=False,
                    timeout=httpx.Timeout(self.timeout),
                    verify=_ssl_context(),
                ) as client:
                    return await self._follow(client, url)
        except TimeoutError:
            raise FetchError(
                INPUT, f"{url} did not answer in full within {self.timeout:g} s"
            ) from None

    async def _follow(self, client: httpx.AsyncClient, url: str) -> Page:
        current = url
        for hop in range(self.max_redirects + 1):
            await self._check_robots(client, current)
            try:
                response = await client.send(client.build_request("GET", current), stream=True)
            except httpx.TimeoutException:
                raise TimeoutError from None
            except httpx.HTTPError as exc:
                host = httpx.URL(current).host
                raise FetchError(INPUT, f"cannot reach {host}: {_describe(exc)}") from None
            try:
                location = response.headers.get("location")
                if response.status_code in _REDIRECTS and location:
                    if hop == self.max_redirects:
                        raise FetchError(
                            INPUT, f"more than {self.max_redirects} redirections from {url}"
                        )
                    current = self._target(current, location)
                    continue
                if response.status_code >= 300:
                    raise FetchError(
                        INPUT,
                        f"{current} answered HTTP {response.status_code} "
                        f"{response.reason_phrase}".rstrip(),
                    )
                return await self._page(response, current)
            finally:
                await response.aclose()
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    @staticmethod
    def _target(current: str, location: str) -> str:
        try:
            target = httpx.URL(current).join(location.strip())
        except (httpx.InvalidURL, ValueError):
            target = None
        if target is None or target.scheme not in ("http", "https") or not target.host:
            raise FetchError(
                INPUT, f'{current} redirected to "{location}", which is not an http or https URL'
            )
        return str(target)

    async def _page(self, response: httpx.Response, url: str) -> Page:
        content_type = response.headers.get("content-type")
        kind = media_type(content_type)
        if kind and kind not in HTML_TYPES:
            raise FetchError(CONVERSION, f"{url} is not an HTML page (Content-Type: {kind})")
        undecodable = _unasked_compression(response)
        if undecodable:
            raise FetchError(
                CONVERSION,
                f"{url} was sent compressed with {undecodable} (Content-Encoding: "
                f"{response.headers['content-encoding']}), which mm did not ask for and cannot "
                "decode",
            )
        try:
            body = await _read(response, self.max_bytes)
        except _TooLarge:
            raise FetchError(
                CONVERSION, f"{url} is larger than {self.max_bytes // (1024 * 1024)} MiB"
            ) from None
        except httpx.TimeoutException:
            raise TimeoutError from None
        except httpx.HTTPError as exc:
            raise FetchError(INPUT, f"{url}: the connection broke: {_describe(exc)}") from None
        if not kind and not looks_like_html(body):
            raise FetchError(
                CONVERSION,
                f"{url} is not an HTML page (no Content-Type, and it does not start like HTML)",
            )
        return Page(url, content_type, body)

    async def _check_robots(self, client: httpx.AsyncClient, url: str) -> None:
        origin = origin_of(url)
        robots = self.robots.get(origin)
        if robots is None:
            robots = await self._read_robots(client, origin)
            self.robots.put(origin, robots)
        if robots.forbid_all:
            raise FetchError(
                INPUT,
                f"{origin}/robots.txt {robots.forbid_all}, so every page of {origin} is treated "
                "as forbidden",
            )
        if not robots.allows(url):
            raise FetchError(INPUT, f"{origin}/robots.txt forbids {url} to mm")

    async def _read_robots(self, client: httpx.AsyncClient, origin: str) -> Robots:
        url = f"{origin}/robots.txt"
        for _ in range(_ROBOTS_REDIRECTS + 1):
            try:
                async with client.stream("GET", url) as response:
                    status = response.status_code
                    location = response.headers.get("location")
                    if status in _REDIRECTS and location:
                        try:
                            url = str(httpx.URL(url).join(location.strip()))
                        except (httpx.InvalidURL, ValueError):
                            return ALLOW_ALL  # unavailable, like a 4xx
                        continue
                    if 200 <= status < 300:
                        body = bytearray()
                        async for chunk in response.aiter_bytes():
                            body += chunk
                            if len(body) >= MAX_ROBOTS_BYTES:
                                break
                        text = bytes(body[:MAX_ROBOTS_BYTES]).decode("utf-8", errors="replace")
                        return Robots.parse(text)
                    if 400 <= status < 500:
                        return ALLOW_ALL
                    return Robots(forbid_all=f"answered HTTP {status}")
            except httpx.TimeoutException:
                raise TimeoutError from None
            except httpx.ConnectError as exc:  # the host itself: say so, not "robots.txt"
                host = httpx.URL(url).host
                raise FetchError(INPUT, f"cannot reach {host}: {_describe(exc)}") from None
            except httpx.HTTPError as exc:
                return Robots(forbid_all=f"cannot be read ({_describe(exc)})")
        return ALLOW_ALL  # too many redirections: unavailable, like a 4xx (RFC 9309)
