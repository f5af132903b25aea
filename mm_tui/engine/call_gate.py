"""The stream's gate for tool calls written as text (engine/text_calls.py): an answer's text is
shown as it comes, but a reply that turns out to be a call must not be shown as an answer
first. From the point where the text starts to look like one of the forms (`<tool_call>`,
`<function=`, `[TOOL_CALLS]`, `<|python_tag|>`, a reply that starts with `{` or `[`, a ```json
fence), the text is held back until it is decided: the block closes and is not a call (it is
let through then), or it is one (everything after it is held to the end of the reply, when
the turn reads the calls of the whole text).

The text-only path costs one regular-expression search per piece: a piece without `<`, `[`,
a backtick or `{` goes through at once. No I/O."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from mm_tui.engine.loose_json import value_close
from mm_tui.engine.text_calls import MARKERS, FoundCalls, find_calls

_TRIGGER = re.compile(r"[<\[`{]")
_PARTIAL = "partial"
_FENCE_NAMES = ("json", "json5", "tool_call", "tool_code")
# what may follow a marker in a call; anything else (prose that names the tag) is let through
_BODIES = {"<tool_call>": ("{", "[", "<function=", "```"), "<|python_tag|>": ("{", "[")}


class CallGate:
    """Takes an answer's text piece by piece (`feed`) and says what to show now; `finish`
    says what is left to show once the reply's calls are known."""

    def __init__(self, tools: Sequence[dict[str, Any]]) -> None:
        self.tools = tools
        self.held = ""  # text not shown yet, from where it started to look like a call
        self.kind: str | None = None  # the form `held` opens with, once known
        self.committed = False  # `held` holds a call: hold the rest to the end
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

    def finish(self, found: FoundCalls | None) -> str:
        """The reply has ended, and `found` are its calls (None: none). What is still to show:
        everything held when it held no call; else what is left of the answer around the
        calls and not shown yet."""
        held, self.held = self.held, ""
        if found is None:
            return held
        after = found.rest[self.shown :].strip()
        return f"\n\n{after}" if after and self.shown else after

    def _held_back(self, piece: str) -> str:
        self.held += piece
        if self.committed:
            return ""
        out = self._settle()
        if self.blank and not out.isspace():
            self.blank = not out
        return out

    def _settle(self) -> str:
        """Let through what cannot open a call; keep what may, until it is decided."""
        out: list[str] = []
        while self.held:
            if self.kind is None:
                trigger = _TRIGGER.search(self.held)
                if trigger is None:
                    out.append(self.held)
                    self.held = ""
                    break
                out.append(self.held[: trigger.start()])
                self.held = self.held[trigger.start() :]
                kind = _opening(self.held, self.blank and all(p.isspace() for p in out if p))
                if kind == _PARTIAL:
                    break
                if kind is None:
                    out.append(self.held[0])
                    self.held = self.held[1:]
                    continue
                self.kind = kind
            if not self._decided(out):
                break
        return "".join(out)

    def _decided(self, out: list[str]) -> bool:
        """Whether the block `held` opens with is decided; one that is no call is let
        through into `out`."""
        if self._not_a_body(out):
            return True
        end = _block_end(self.kind, self.held)
        if end is None:
            return False
        block = self.held[:end]
        if find_calls(block, self.tools) is not None:
            self.committed = True
            return False
        out.append(block)
        self.held = self.held[end:]
        self.kind = None
        return True

    def _not_a_body(self, out: list[str]) -> bool:
        """Whether what follows the marker in `held` cannot be a call: the marker is then let
        through into `out`, and the text after it looked at afresh."""
        kind = self.kind
        bodies = _BODIES.get(kind or "")
        if kind is None or bodies is None:
            return False
        body = self.held[len(kind) :].lstrip()
        if not body or any(body.startswith(b) or b.startswith(body) for b in bodies):
            return False
        out.append(kind)
        self.held = self.held[len(kind) :]
        self.kind = None
        return True


def _opening(text: str, at_start: bool) -> str | None:
    """The form `text` (which starts with a trigger) opens, _PARTIAL when it is too short to
    tell, None when it opens none. `at_start`: only blanks came before it in the reply."""
    for marker in MARKERS:
        if text.startswith(marker):
            return marker
        if marker.startswith(text):
            return _PARTIAL
    if at_start and text[0] in "{[":
        return "json"
    if not text.startswith("```"):
        return _PARTIAL if "```".startswith(text) else None
    newline = text.find("\n")
    if newline < 0:
        return _PARTIAL
    name = text[3:newline].strip().lower()
    if name in _FENCE_NAMES:
        return "fence"
    if name:
        return None
    body = text[newline + 1 :].lstrip()
    if not body:
        return _PARTIAL
    return "fence" if body[0] in "{[" else None


def _block_end(kind: str | None, text: str) -> int | None:
    """Where the block of `kind` that `text` opens with ends, None while it is open. Mistral's
    and Llama's markers take the rest of the reply: they never close before its end."""
    if kind == "<tool_call>":
        end = text.find("</tool_call>")
        return None if end < 0 else end + len("</tool_call>")
    if kind == "<function=":
        end = text.find("</function>")
        return None if end < 0 else end + len("</function>")
    if kind == "json":
        end = value_close(text, 0)
        return None if end < 0 else end
    if kind == "fence":
        close = re.search(r"\n[ \t]*```[ \t]*(\n|$)", text[3:])
        return None if close is None else 3 + close.end()
    return None
