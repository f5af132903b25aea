"""robots.txt, as RFC 9309 says, for the product token `mm`.

The group for `mm` (case-insensitive) applies, else the `*` group, else nothing is forbidden;
several groups naming the same agent are merged. Within the group, the longest matching rule
wins and `Allow` wins a tie; `*` matches any run of characters and a final `$` anchors the end.
Paths and patterns are compared percent-encoding normalised: non-ASCII characters encoded as
UTF-8, `%XX` of an unreserved character decoded, other `%XX` upper-cased (RFC 9309, 2.2.2).

What the fetch of robots.txt answers decides the rest, as the reference (docs/tools.md) has it:
a 4xx allows everything, a 5xx or an unreachable server forbids everything. Choices where the
reference is silent:

- "unreachable" is a robots.txt whose connection broke before a whole answer; when the host
  itself cannot be reached (connection refused, unknown name) the error names the host, since
  the page could not be fetched either;
- a robots.txt redirected more than five times counts as unavailable, i.e. like a 4xx (RFC 9309
  2.3.1.2); only the first 512 KiB are read (the RFC asks for at least 500 KiB);
- the 24 h cache keeps what a 2xx or a 4xx said, not a failure: a site that answered 503 once is
  asked again on the next call rather than being refused for a day.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

PRODUCT_TOKEN = "mm"
CACHE_SECONDS = 24 * 3600
MAX_ROBOTS_BYTES = 512 * 1024

_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_TOKEN = re.compile(r"[A-Za-z_-]+")


def normalize(path: str) -> str:
    """A path or pattern in the form both are compared in."""

    def percent(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else "%" + match.group(1).upper()

    if "%" in path:
        path = _PERCENT.sub(percent, path)
    if not path.isascii():
        path = "".join(
            ch if ord(ch) < 128 else "".join(f"%{b:02X}" for b in ch.encode("utf-8")) for ch in path
        )
    return path


@dataclass(frozen=True)
class Rule:
    allow: bool
    pattern: str  # normalised

    @property
    def regex(self) -> re.Pattern[str]:
        return _compile(self.pattern)

    def matches(self, path: str) -> bool:
        return self.regex.match(path) is not None


@functools.lru_cache(maxsize=4096)
def _compile(pattern: str) -> re.Pattern[str]:
    """A rule as an expression matched from the path's start: `*` any run, a final `$` the end."""
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    return re.compile(
        ".*".join(re.escape(piece) for piece in body.split("*")) + (r"\Z" if anchored else ""),
        re.DOTALL,
    )


@dataclass
class _Group:
    agents: list[str] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)


@dataclass(frozen=True)
class Robots:
    """What one origin's robots.txt allows `mm`."""

    rules: tuple[Rule, ...] = ()
    forbid_all: str = ""  # why every page is forbidden (a 5xx, an unreachable robots.txt)

    @classmethod
    def parse(cls, text: str, token: str = PRODUCT_TOKEN) -> Robots:
        groups: list[_Group] = []
        current: _Group | None = None
        for line in text.lstrip("\ufeff").splitlines():
            line = line.split("#", 1)[0]
            key, colon, value = line.partition(":")
            if not colon:
                continue
            key = key.strip().lower()
            value = value.strip()
            if key == "user-agent":
                if current is None or current.rules:
                    current = _Group()
                    groups.append(current)
                current.agents.append(value)
            elif key in ("allow", "disallow") and current is not None:
                if value:  # an empty Disallow forbids nothing, an empty Allow allows nothing
                    current.rules.append(Rule(key == "allow", normalize(value)))
                else:
                    current.rules.append(Rule(True, ""))  # still ends the user-agent lines
        token = token.lower()
        mine = [g for g in groups if any(_agent_token(a) == token for a in g.agents)]
        if not mine:
            mine = [g for g in groups if "*" in (a.strip() for a in g.agents)]
        return cls(tuple(rule for g in mine for rule in g.rules if rule.pattern))

    def allows(self, url: str) -> bool:
        if self.forbid_all:
            return False
        parts = urlsplit(url)
        path = parts.path or "/"
        if path == "/robots.txt":
            return True  # implicitly allowed (RFC 9309, 2.2.2)
        if parts.query:
            path += "?" + parts.query
        path = normalize(path)
        best: Rule | None = None
        for rule in self.rules:
            if rule.matches(path) and (
                best is None
                or len(rule.pattern) > len(best.pattern)
                or (len(rule.pattern) == len(best.pattern) and rule.allow)
            ):
                best = rule
        return best is None or best.allow


ALLOW_ALL = Robots()


def _agent_token(agent: str) -> str:
    match = _TOKEN.match(agent.strip())
    return match.group().lower() if match else ""


def origin_of(url: str) -> str:
    """scheme://host[:port], the key robots.txt is read and cached by."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower().rsplit('@', 1)[-1]}"


class RobotsCache:
    """What each origin's robots.txt said, for 24 hours."""

    def __init__(
        self, ttl: float = CACHE_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl = ttl
        self.clock = clock
        self._entries: dict[str, tuple[float, Robots]] = {}

    def get(self, origin: str) -> Robots | None:
        entry = self._entries.get(origin)
        if entry is None:
            return None
        if self.clock() >= entry[0]:
            del self._entries[origin]
            return None
        return entry[1]

    def put(self, origin: str, robots: Robots) -> None:
        if not robots.forbid_all:
            self._entries[origin] = (self.clock() + self.ttl, robots)

    def clear(self) -> None:
        self._entries.clear()


SHARED_CACHE = RobotsCache()
"""The process-wide cache every FetchContentTool uses unless given its own."""
