"""Reasoning written into the answer's text as `<think>…</think>`, read as reasoning.

Reasoning models on a server without a reasoning parser (llama.cpp without `--reasoning-format`,
llama-cpp-python, older vLLM and LM Studio) put their thinking into `content`, between
`<think>` and `</think>`. Shown as the answer it would be the answer; sent back it fills the
window. So a reply whose text opens with `<think>` (after blank space) goes to the thinking
until `</think>`, and only what follows is the answer. Some chat templates open the tag in the
prompt themselves and the reply holds only the closing one: `opened` says so (the model's probe
learns it), and then the text is thinking until `</think>`, or, if none comes, the answer after
all: it is then given again as the answer when the reply ends, so that nothing of it is lost.

The text-only path costs one flag test per piece once the reply's start has shown no tag.
"""

from __future__ import annotations

OPEN = "<think>"
CLOSE = "</think>"

Piece = tuple[bool, str]  # (thinking, text)


class ThinkSplitter:
    """Takes a reply's text piece by piece (`feed`) and says which parts are thinking."""

    def __init__(self, opened: bool = False) -> None:
        self.state = "thinking" if opened else "start"  # start, thinking, answer
        self.opened = opened
        self.buffer = ""  # the reply's start while it may still be `<think>`, or a tag's part
        self.unclosed: list[str] | None = [] if opened else None  # an opened reply's thinking
        self.after_close = False  # the answer's leading blank lines are still to be dropped

    @property
    def done(self) -> bool:
        """Nothing more to split: every later piece is the answer as it is."""
        return self.state == "answer" and not self.buffer and not self.after_close

    def feed(self, text: str) -> list[Piece]:
        if self.state == "start":
            return self._start(text)
        if self.state == "thinking":
            return self._thinking(text)
        if self.after_close:
            text = text.lstrip("\n")
            self.after_close = not text
        return [(False, text)] if text else []

    def finish(self) -> list[Piece]:
        """The reply ended: a start too short to tell is the answer; an `opened` reply that
        never closed its thinking was the answer all along (it had been held, not shown)."""
        rest, self.buffer = self.buffer, ""
        if self.state == "thinking" and self.unclosed is not None:
            self.state = "answer"
            whole = "".join(self.unclosed) + rest
            return [(False, whole)] if whole else []
        thinking = self.state == "thinking"
        self.state = "answer"
        return [(thinking, rest)] if rest else []

    def _start(self, text: str) -> list[Piece]:
        seen = self.buffer + text
        stripped = seen.lstrip()
        if OPEN.startswith(stripped):  # "", "<", "<thi": not known yet
            self.buffer = seen
            return []
        self.buffer = ""
        if stripped.startswith(OPEN):
            self.state = "thinking"
            return self._thinking(stripped[len(OPEN) :])
        self.state = "answer"
        return [(False, seen)]

    def _thinking(self, text: str) -> list[Piece]:
        seen = self.buffer + text
        end = seen.find(CLOSE)
        if end >= 0:
            self.buffer, self.state, self.unclosed = "", "answer", None
            out: list[Piece] = [(True, seen[:end])] if seen[:end] else []
            after = seen[end + len(CLOSE) :].lstrip("\n")
            self.after_close = not after
            return [*out, (False, after)] if after else out
        keep = _partial_tail(seen)
        self.buffer = seen[len(seen) - keep :] if keep else ""
        shown = seen[: len(seen) - keep] if keep else seen
        if shown and self.unclosed is not None:
            self.unclosed.append(shown)
        return [(True, shown)] if shown else []


def _partial_tail(text: str) -> int:
    """How many characters at the end of `text` may begin `</think>`."""
    for size in range(min(len(CLOSE) - 1, len(text)), 0, -1):
        if CLOSE.startswith(text[-size:]):
            return size
    return 0
