"""Keeping the conversation inside the model's context window.

People run small models with small windows (2,048 or 4,096 tokens) in sessions of many tool calls;
without this, the request outgrows the window after a few calls and the server refuses it (or, for
Ollama, silently drops its start, tools included). So mm counts, and before each request makes
room in three steps, each only when the one before was not enough:

1. shorten old tool outputs, oldest first, to their head and tail with a mark that says what was
   cut (the session journal keeps every output whole, and the window still shows it whole);
2. compact: the model summarises the conversation, and the summary replaces the history;
3. stop the turn with the advice a context overflow gets.

Counting. The server's `usage.prompt_tokens` of the last request is exact; what was added since
is estimated from its length in characters, at the characters-per-token ratio that request
showed (a conservative 3 characters per token before any usage arrives, so mm errs early, never
late). A message's length is measured once and cached by identity, so counting a history of
thousands of messages costs a dictionary look-up per message.

Sizes are policy, chosen here and nowhere else: the answer's reserve is a quarter of the window up
to 4,096 tokens; a tool result gets at most a quarter of the window and a third of the room the
system prompt and the tool declarations leave (maxOutput stays the ceiling: on a 2,048-token model
the declarations alone take about half); shortening goes down to 70 % of what a request may hold,
so that it does not come back at every call, and keeps less of each output when the room is small.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from mm_tui.core.frozen import frozen
from mm_tui.engine.context_window import ContextWindow

DEFAULT_CHARS_PER_TOKEN = 3.0
MESSAGE_OVERHEAD = 8  # the chat template's tokens around each message (role, separators)
FAIR_SHARE = 0.25  # of the window, for one tool result
ROOM_SHARE = 0.35  # of the room the system prompt and the tools leave, for one tool result
SHRINK_TO = 0.7  # of the request budget, once shortening starts
KEEP_CHARS = 480  # a shortened output keeps at most this much (head and tail together)
MIN_KEEP_CHARS = 160
MIN_SHARE_CHARS = 400
CUT_MARK = (
    "\n[… {cut:,} characters cut by mm to fit the model's {window:,}-token context; "
    "the session journal keeps the whole output …]\n"
)


def reserve_for_answer(window: int) -> int:
    """Tokens kept free for the model's answer."""
    return min(window // 4, 4096)


@frozen
class Shortened:
    """What one shortening pass did."""

    outputs: int
    chars_cut: int


class ContextMeter:
    """Counts the tokens of the next request and keeps it inside the window."""

    def __init__(self, window: ContextWindow | None = None) -> None:
        self.window = window
        self.chars_per_token = DEFAULT_CHARS_PER_TOKEN
        self._sizes: dict[int, tuple[dict[str, Any], int]] = {}
        self._base_tokens = 0  # the server's count of the last request
        self._base_chars = 0  # the characters of that request
        self._tools_chars: tuple[int, int] = (0, 0)  # (id of the declarations, their length)
        # The last history measured (held, so that its id is not another list's), its length,
        # its last message and their characters: measuring a history that only grew costs what
        # it grew by.
        self._measured: tuple[Sequence[dict[str, Any]], int, object, int] | None = None

    # -- counting --------------------------------------------------------------------------------

    def size(self, message: dict[str, Any]) -> int:
        """A message's length in characters as sent, measured once."""
        key = id(message)
        known = self._sizes.get(key)
        if known is not None and known[0] is message:
            return known[1]
        chars = len(json.dumps(message, ensure_ascii=False, default=str))
        self._sizes[key] = (message, chars)
        return chars

    def chars(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> int:
        """Characters of a request: its messages and its tool declarations."""
        key, length = self._tools_chars
        if key != id(tools):
            length = len(json.dumps(list(tools), ensure_ascii=False)) if tools else 0
            self._tools_chars = (id(tools), length)
        return length + self._messages_chars(messages)

    def _messages_chars(self, messages: Sequence[dict[str, Any]]) -> int:
        known = self._measured
        count = len(messages)
        if (
            known is not None
            and known[0] is messages
            and 0 < known[1] <= count
            and messages[known[1] - 1] is known[2]
        ):
            total = known[3] + sum(map(self.size, messages[known[1] :]))
        else:
            total = sum(map(self.size, messages))
        self._measured = (messages, count, messages[-1] if messages else None, total)
        return total

    def estimate(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> int:
        """Tokens of a request made of `messages` and `tools`."""
        chars = self.chars(messages, tools)
        if self._base_tokens:
            extra = (chars - self._base_chars) / self.chars_per_token
            return max(0, round(self._base_tokens + extra))
        return round(chars / self.chars_per_token) + MESSAGE_OVERHEAD * len(messages)

    def estimate_alone(self, messages: Sequence[dict[str, Any]]) -> int:
        """Tokens of `messages` at the default ratio, no count under them: a part of a request
        whose whole the server counted."""
        chars = sum(map(self.size, messages))
        return round(chars / DEFAULT_CHARS_PER_TOKEN) + MESSAGE_OVERHEAD * len(messages)

    def observed(self, prompt_tokens: int, chars: int) -> None:
        """The server counted `prompt_tokens` for a request of `chars` characters."""
        if prompt_tokens <= 0 or chars <= 0:
            return
        ratio = chars / prompt_tokens
        if not 1.0 <= ratio <= 8.0:  # not a count of this request (a cache's, a stub's): ignored
            return
        self._base_tokens, self._base_chars = prompt_tokens, chars
        self.chars_per_token = ratio

    @property
    def counted(self) -> bool:
        """Whether a count of the server's is under the estimate (else it is the estimate
        alone, at the ratio learned so far or the default)."""
        return self._base_tokens > 0

    def forget_base(self) -> None:
        """The history was replaced (a new session, a compaction): the last count says nothing
        of it any more; the learned ratio still holds."""
        self._base_tokens = self._base_chars = 0
        self._sizes.clear()
        self._measured = None

    # -- sizes -----------------------------------------------------------------------------------

    @property
    def budget(self) -> int | None:
        """Tokens a request may hold, the answer's reserve left aside; None while unknown."""
        if self.window is None:
            return None
        return self.window.tokens - reserve_for_answer(self.window.tokens)

    def room(self, fixed: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> int | None:
        """Tokens a request may hold beside `fixed` (the system prompt) and the tools."""
        budget = self.budget
        if budget is None:
            return None
        return max(0, budget - self.estimate(fixed, tools))

    def fair_share_chars(self, room: int) -> int | None:
        """The most characters one tool result may take of the window."""
        if self.window is None:
            return None
        tokens = min(self.window.tokens * FAIR_SHARE, room * ROOM_SHARE)
        return max(MIN_SHARE_CHARS, int(tokens * self.chars_per_token))

    def keep_chars(self, room: int) -> int:
        """What a shortened old output keeps: less when the room is small."""
        return max(MIN_KEEP_CHARS, min(KEEP_CHARS, int(room * self.chars_per_token / 10)))

    def cut(self, text: str, keep: int) -> str:
        """`text` cut to about `keep` characters: its head and its tail around a mark."""
        if len(text) <= keep or self.window is None:
            return text
        head = keep // 2
        tail = keep - head
        mark = CUT_MARK.format(cut=len(text) - head - tail, window=self.window.tokens)
        return text[:head] + mark + text[len(text) - tail :]

    # -- making room -----------------------------------------------------------------------------

    def shorten_old_outputs(
        self,
        messages: list[dict[str, Any]],
        tools: Sequence[dict[str, Any]],
        target: int,
        keep: int,
        replace: Callable[[int, dict[str, Any], int], None],
    ) -> Shortened:
        """Shorten tool results, oldest first, until the request is at most `target` tokens.
        The results of the model's last round go last, and only when the older ones were not
        enough. `replace(index, message, cut)` puts the shortened message in the history."""
        last_call = max(
            (i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1
        )
        order = [i for i, m in enumerate(messages) if m.get("role") == "tool" and i < last_call]
        order += [i for i, m in enumerate(messages) if m.get("role") == "tool" and i > last_call]
        outputs = cut_total = 0
        used = self.estimate(messages, tools)
        for index in order:
            if used <= target:
                break
            message = messages[index]
            content = message.get("content")
            if not isinstance(content, str) or len(content) <= keep + 200:
                continue
            shorter = self.cut(content, keep)
            cut = len(content) - len(shorter)
            replace(index, {**message, "content": shorter}, cut)
            self._measured = None  # a message in the middle changed
            outputs += 1
            cut_total += cut
            used -= round(cut / self.chars_per_token)
        return Shortened(outputs, cut_total)


def summary_request(
    meter: ContextMeter,
    messages: list[dict[str, Any]],
    ask: dict[str, Any],
) -> list[dict[str, Any]]:
    """The request that asks for a summary, inside the window: the system message, then as many
    of the latest messages as fit (starting at a question or an answer, never at a tool result
    whose call was left out), then `ask`."""
    request = [*messages, ask]
    budget = meter.budget
    if budget is None or meter.estimate(request, ()) <= budget:
        return request
    head = [messages[0]] if messages and messages[0].get("role") == "system" else []
    room = budget - meter.estimate([*head, ask], ())
    kept: list[dict[str, Any]] = []
    for message in reversed(messages[len(head) :]):
        cost = round(meter.size(message) / meter.chars_per_token) + MESSAGE_OVERHEAD
        if cost > room:
            break
        kept.append(message)
        room -= cost
    kept.reverse()
    while kept and kept[0].get("role") == "tool":
        kept.pop(0)
    return [*head, *kept, ask]
