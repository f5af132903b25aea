"""The one way fetch_content fails: a `FetchError` carrying the code and class of the reference
(docs/tools.md), which the tool turns into `[fetch_content: error N (<class>) — <reason>]` for
the model. Every module of the package raises it, so that the tool has a single place where
failures become text."""

from __future__ import annotations

CONVERSION = 1  # not HTML, larger than 5 MiB, undecodable, output not writable
INPUT = 2  # unreachable, timeout, status >= 300, too many redirections, robots.txt
USAGE = 3  # bad url, scheme, tables value, baseUrl

CLASSES = {CONVERSION: "conversion", INPUT: "input", USAGE: "usage"}


class FetchError(Exception):
    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason

    @property
    def message(self) -> str:
        return f"[fetch_content: error {self.code} ({CLASSES[self.code]}) — {self.reason}]"
