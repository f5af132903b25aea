"""The `url` and `baseUrl` arguments: what a model types, repaired where the intent is plain, and
refused (error 3, usage) where it is not.

Repairs, as the reference (docs/tools.md) has them: a missing scheme means `https://`
(`k33g.org`); a scheme typed without its colon is restored (`https//k33g.org`). Choices where the
reference is silent: `https:/k33g.org` and `https:k33g.org` are repaired the same way,
`//k33g.org` gets `https:`, and `host:8080/x` is a host and a port (not a scheme named `host`),
while `mailto:`, `file:`, `javascript:` and any other scheme are refused. `baseUrl` is absolute
when it has a scheme and a host.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import httpx

from mm_tui.tools.fetch.errors import USAGE, FetchError

_NO_COLON = re.compile(r"^(https?)(?://?|:/?)(?=[^/])", re.IGNORECASE)
_HAS_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_PORT_AFTER_COLON = re.compile(r"^[^:/?#]+:\d*(?:[/?#]|$)")


def repair_url(raw: str) -> str:
    """The URL to fetch, or FetchError(3) saying why there is none."""
    url = raw.strip()
    if not url:
        raise FetchError(USAGE, "the url is empty")
    match = _NO_COLON.match(url)
    if match and not url[match.end(1) :].startswith("://"):
        url = match.group(1) + "://" + url[match.end() :]
    elif url.startswith("//"):
        url = "https:" + url
    elif "://" not in url and not (_HAS_SCHEME.match(url) and not _PORT_AFTER_COLON.match(url)):
        url = "https://" + url
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise FetchError(USAGE, f'"{raw.strip()}" is not a valid URL: {exc}') from None
    if parts.scheme.lower() not in ("http", "https"):
        raise FetchError(
            USAGE, f'"{raw.strip()}" is not a web address: only http and https are fetched'
        )
    if not parts.hostname:
        raise FetchError(USAGE, f'"{raw.strip()}" has no host name')
    try:
        httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as exc:
        raise FetchError(USAGE, f'"{raw.strip()}" is not a valid URL: {exc}') from None
    return url


def check_base_url(raw: str) -> str:
    """`baseUrl` as given when it is absolute; "" when not given."""
    base = raw.strip()
    if not base:
        return ""
    try:
        parts = urlsplit(base)
    except ValueError:
        parts = None
    if parts is None or not parts.scheme or not parts.netloc:
        raise FetchError(
            USAGE,
            f'baseUrl must be an absolute URL such as https://example.com/docs/, not "{base}"',
        )
    return base
