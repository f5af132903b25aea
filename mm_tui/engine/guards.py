"""The guards against a model that goes round in circles, as the reference (docs/tools.md) has
them.

- `LoopDetector`: the same (tool, input, output) three times in a row gets a warning appended to
  the output; three more stop the turn.
- `RunawayDetector`: a tool call whose streamed arguments repeat one pattern, or grow past
  256 KB, stops the generation at once (a derailed model otherwise composes garbage for minutes).
- The watchdog (silence from the model) lives in the turn loop, around the stream.
"""

from __future__ import annotations

from mm_tui.core.frozen import frozen

LOOP_WARNING = (
    "[LOOP_DETECTED: You have attempted the same action multiple times with the same result. "
    "Please try a different approach or provide more information.]"
)
LOOP_WARN_AT = 3
LOOP_STOP_AT = 6


def loop_stop_message(tool: str) -> str:
    return (
        f"[error: the model repeated the same {tool} call {LOOP_STOP_AT} times in a row with the "
        "same failing result — turn stopped by the loop detector; rephrase the request, or fix "
        "what the tool kept reporting]"
    )


@frozen
class LoopVerdict:
    count: int  # how many identical calls in a row, this one included

    @property
    def warn(self) -> bool:
        return LOOP_WARN_AT <= self.count < LOOP_STOP_AT

    @property
    def stop(self) -> bool:
        return self.count >= LOOP_STOP_AT


class LoopDetector:
    """Counts identical consecutive calls. `/new` resets it; `/compact` keeps it."""

    def __init__(self) -> None:
        self._last: tuple[str, str, str] | None = None
        self._count = 0

    def record(self, tool: str, arguments: str, output: str) -> LoopVerdict:
        triple = (tool, arguments, output)
        if triple == self._last:
            self._count += 1
        else:
            self._last, self._count = triple, 1
        return LoopVerdict(self._count)

    def reset(self) -> None:
        self._last, self._count = None, 0


RUNAWAY_WINDOW = 256
RUNAWAY_MIN_PATTERN = 4
RUNAWAY_MAX_PATTERN = 64
RUNAWAY_MAX_BYTES = 256 * 1024


def _excerpt(arguments: str) -> str:
    return "…" + arguments[-40:].replace("\n", "\\n")


class RunawayDetector:
    """Watches one tool call's arguments as they stream.

    A pattern is the *smallest* period of the last 256 characters: a long run of one character
    (a line of `=` in a Markdown file) has period 1 and is not a runaway; `"a": 1, "a": 1, …` is.
    """

    def check(self, arguments: str) -> str | None:
        """The error to stop the generation with, or None while the call looks sane."""
        n = len(arguments)
        # Encoded only when it could be too long: at most 4 bytes a character, and ASCII is one.
        # This runs at every streamed piece of the arguments.
        if n > RUNAWAY_MAX_BYTES or (
            n * 4 > RUNAWAY_MAX_BYTES
            and not arguments.isascii()
            and len(arguments.encode("utf-8", "replace")) > RUNAWAY_MAX_BYTES
        ):
            return (
                "[error: the model's tool call ran away: its arguments exceed 256 KB "
                f"({n} characters so far: {_excerpt(arguments)}) — generation stopped; "
                "rephrase the request, or try another model]"
            )
        if n < RUNAWAY_WINDOW:
            return None
        tail = arguments[-RUNAWAY_WINDOW:]
        for period in range(1, RUNAWAY_MAX_PATTERN + 1):
            if tail[period:] == tail[:-period]:
                if period >= RUNAWAY_MIN_PATTERN:
                    return (
                        "[error: the model's tool call ran away: its arguments repeat the same "
                        f"pattern ({n} characters so far: {_excerpt(arguments)}) — generation "
                        "stopped; rephrase the request, or try another model]"
                    )
                return None
        return None
