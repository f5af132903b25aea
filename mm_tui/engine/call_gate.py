"""The stream's gate for tool calls written as text (engine/text_calls.py): an answer's text is
shown as it comes, but a reply that turns out to be a call must not be shown as an answer
first. From the point where the text starts to look like one of the forms (`<tool_call>`,
`<function=`, `[TOOL_CALLS]`, `<|python_tag|>`, a reply that starts with `{` or `[`, a ```json
fence), the text is held back until it is decided: the block closes and is not a call (it is
let through then), or it is one (everything after it is held to the end of the reply, when
the turn reads the calls of the whole text).

The text-only path costs one regular-expression search per piece: a piece in which no marker
or fence can begin (`<t`, `<f`, `<|`, `[T`, three backticks, or their first characters at its
end) goes through at once. A held block is searched for its end only in what is
new, so a long call held costs what its length costs. No I/O."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from mm_tui.core.frozen import mutable
from mm_tui.engine.text_calls import MARKERS, FoundCalls, find_calls

# where a marker or a fence may begin (or begins at the end of the text so far, to be known
# with the next piece); a `{` or `[` opens a call only at the reply's start (_START)
_TRIGGER = re.compile(r"<(?:[tf|]|$)|\[(?:T|$)|`(?:``|`?$)")
_START = re.compile(r"\s*[{\[]")
_FENCE_END = re.compile(r"\n[ \t]*```[ \t]*(\n|$)")
_PARTIAL = "partial"
_FENCE_NAMES = ("json", "json5", "tool_call", "tool_code")
# what may follow an opening for it to be a call; anything else (prose that names the tag, a
# list of links) is let through
_BODIES = {
    "<tool_call>": ("{", "[", "<function=", "```"),
    "<|python_tag|>": ("{", "["),
    "{": ('"', "'", "}"),
    "[": ("{",),
}
_LONGEST = max(len(marker) for marker in MARKERS)
_CLOSINGS = {"<tool_call>": "</tool_call>", "<function=": "</function>"}


@mutable
class _Block:
    """A held block whose end is looked for: its form, how far it was searched, and for JSON
    the depth and the open string at that point."""

    kind: str
    scanned: int = 0
    depth: int = 0
    quote: str = ""
    body_seen: bool = False  # what follows the opening was looked at, and may be a call


class CallGate:
    """Takes an answer's text piece by piece (`feed`) and says what to show now; `finish`
    says what is left to show once the reply's calls are known."""

    def __init__(self, tools: Sequence[dict[str, Any]]) -> None:
        self.tools = tools
        self.held = ""  # text not shown yet, from where it started to look like a call
        self.block: _Block | None = None  # the form `held` opens with, once known
        self.after: list[str] | None = None  # a call was found: the rest, held to the end
        self.blank = True  # nothing but blanks let through yet: a `{` opens a call here
        self.shown = 0  # characters let through

    def feed(self, piece: str) -> str:
        """What of the text so far can be shown now that `piece` came."""
        if self.held or self.blank or _TRIGGER.search(piece) is not None:
            out = self._held_back(piece)
        else:
            out = piece
        self.shown += len(out)
        return out

    def finish(self, found: FoundCalls | None, text: str = "") -> str:
        """The reply (`text`) has ended, and `found` are its calls (None: none). What is
        still to show: everything held when it held no call; else what is left of the answer
        around the calls and not shown yet (the answer before the calls was shown)."""
        held = self.held + "".join(self.after or ())
        self.held, self.after = "", None
        if found is None:
            return held
        shown = text[: self.shown].rstrip()
        after = found.rest[len(shown) :].strip() if found.rest.startswith(shown) else ""
        return f"\n\n{after}" if after and shown else after

    def _held_back(self, piece: str) -> str:
        if self.after is not None:
            self.after.append(piece)
            return ""
        self.held += piece
        out = self._settle()
        if self.blank and not out.isspace():
            self.blank = not out
        return out

    def _settle(self) -> str:
        """Let through what cannot open a call; keep what may, until it is decided."""
        out: list[str] = []
        while self.held:
            if self.block is None:
                at = self._trigger()
                if at < 0:
                    out.append(self.held)
                    self.held = ""
                    break
                out.append(self.held[:at])
                self.held = self.held[at:]
                kind = _opening(self.held, self.blank and all(p.isspace() for p in out if p))
                if kind == _PARTIAL:
                    break
                if kind is None:
                    out.append(self.held[0])
                    self.held = self.held[1:]
                    continue
                self.block = _Block(kind)
            if not self._decided(self.block, out):
                break
        return "".join(out)

    def _trigger(self) -> int:
        """Where in `held` a call may open (-1: nowhere): a `{` or `[` first in the reply, or
        a marker or a fence."""
        if self.blank:
            start = _START.match(self.held)
            if start is not None:
                return start.end() - 1
        found = _TRIGGER.search(self.held)
        return -1 if found is None else found.start()

    def _decided(self, block: _Block, out: list[str]) -> bool:
        """Whether the block `held` opens with is decided; one that is no call is let
        through into `out`."""
        if not block.body_seen:
            body = _body_fits(block.kind, self.held)
            if body is None:
                return False
            if not body:  # the opening is let through; what follows it is looked at afresh
                out.append(self.held[: len(block.kind)])
                self.held = self.held[len(block.kind) :]
                self.block = None
                return True
            block.body_seen = True
        end = _block_end(block, self.held)
        if end is None:
            return False
        text = self.held[:end]
        if find_calls(text, self.tools) is not None:
            self.after = []
            return False
        out.append(text)
        self.held = self.held[end:]
        self.block = None
        return True


def _opening(text: str, at_start: bool) -> str | None:
    """The form `text` (which starts with a trigger) opens, _PARTIAL when it is too short to
    tell, None when it opens none. `at_start`: only blanks came before it in the reply."""
    if text.startswith(MARKERS):
        return next(marker for marker in MARKERS if text.startswith(marker))
    if len(text) < _LONGEST and any(marker.startswith(text) for marker in MARKERS):
        return _PARTIAL
    first = text[0]
    if first != "`":
        return first if at_start and first in "{[" else None
    if not text.startswith("```"):
        return _PARTIAL if "```".startswith(text) else None
    newline = text.find("\n")
    if newline < 0:
        return _PARTIAL
    name = text[3:newline].strip().lower()
    if name in _FENCE_NAMES:
        return "```"
    if name:
        return None
    body = text[newline + 1 :].lstrip()
    if not body:
        return _PARTIAL
    return "```" if body[0] in "{[" else None


def _body_fits(kind: str, text: str) -> bool | None:
    """Whether what follows the opening `kind` in `text` may be a call; None until enough of
    it has come to tell."""
    bodies = _BODIES.get(kind)
    if bodies is None:
        return True
    body = text[len(kind) : len(kind) + 64].lstrip()
    if not body:
        return None
    if any(body.startswith(b) for b in bodies):
        return True
    return None if any(b.startswith(body) for b in bodies) else False


def _block_end(block: _Block, text: str) -> int | None:
    """Where the block that `text` opens with ends, None while it is open; `block` keeps how
    far it was searched. Mistral's and Llama's markers take the rest of the reply: they never
    close before its end."""
    kind = block.kind
    if kind == "{" or kind == "[":
        return _json_end(block, text)
    closing = _CLOSINGS.get(kind)
    start = max(block.scanned - 16, 0)
    block.scanned = len(text)
    if closing is not None:
        end = text.find(closing, start)
        return None if end < 0 else end + len(closing)
    if kind == "```":
        close = _FENCE_END.search(text, max(start, 3))
        return None if close is None else close.end()
    return None


def _json_end(block: _Block, text: str) -> int | None:
    """The end of the JSON object or array `text` opens with, searched from where the last
    search stopped (strings in either quote skipped)."""
    i, depth, quote, n = block.scanned, block.depth, block.quote, len(text)
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch == '"' or ch == "'":
            quote = ch
        elif ch == "{" or ch == "[":
            depth += 1
        elif ch == "}" or ch == "]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    block.scanned, block.depth, block.quote = i, depth, quote
    return None
