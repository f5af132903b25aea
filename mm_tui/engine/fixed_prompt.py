"""The fixed part of every request, the system prompt (with AGENTS.md) and the tool declarations,
kept within a budget of the window: max(800 tokens, 15% of it). On a small local model the full
forms fill the window before any work starts (a coding agent's prompt and tools take 1,500 to
14,000 tokens; a 2,048-token model has 1,536 for everything once the answer's reserve is kept).

Over the budget, the built-in system prompt and every declaration take their short forms
(`Tool.short_declaration`: the first sentence, required parameters only); still over, the MCP
tools that do not fit are left out, and `find_tool` is declared to give their declarations on
demand. The person's own words (a configured systemPrompt, AGENTS.md) are sent whole.

Counted as the server counts: its `/tokenize` where it has one (engine/server_tokens.py), else
the usage of a turn's first request less the user's message; an estimate at the last count's
characters per token until then. Counts are kept by the text counted, so each form of the
prompt is asked once, not per request.

A model spoken to in chat only (its server refuses tools and it wrote no call mm could read:
engine/ask_style.py) is sent neither declarations nor the built-in prompt, which tells it to use
tools it cannot call: CHAT_ONLY_PROMPT takes the built-in prompt's place, in the sent copy only
(`without_tools`), and plan mode's note loses its commands. The rest stays as it is: AGENTS.md,
a compaction's summary, and a configured systemPrompt, the person's own words, whatever they
say of tools."""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mm_tui.config import Settings
from mm_tui.core.frozen import frozen
from mm_tui.engine.instructions import Instructions
from mm_tui.engine.permissions import PLAN_NOTE
from mm_tui.tools.base import Tool

if TYPE_CHECKING:
    from mm_tui.tools.find_tool import FindToolTool

BUDGET_FLOOR = 800  # tokens: the least budget, whatever the window
BUDGET_SHARE = 0.15  # of the window
DEFAULT_CHARS_PER_TOKEN = 3.0  # before any count: conservative, as the context meter's
MAX_COUNTS = 4  # counts asked before one request at most (each choice may change the form)

DEFAULT_SYSTEM_PROMPT = """\
You are mm, a coding agent working in a terminal, in the folder {cwd}.
Use the tools to look at the code, run commands and change files; do not guess what a file
holds, read it. Keep changes small and say what you did in a few sentences. When a tool reports
an error, read it and adapt instead of repeating the same call."""

SHORT_SYSTEM_PROMPT = (
    "You are mm, a coding agent in a terminal, in the folder {cwd}. Use the tools; read a file "
    "before changing it; keep changes small and say briefly what you did."
)


CHAT_ONLY_PROMPT = """\
You are mm, a coding assistant working in a terminal, in the folder {cwd}. You have no tools
here: you cannot read files or run commands. Answer from what the person shows you, ask for the
files or the output you need, and write the changes you propose as code in your reply. Keep
them small and say what they do in a few sentences."""


CHAT_ONLY_PLAN_NOTE = """

You are in plan mode: the person wants a plan before anything changes. End with a short
numbered plan of the changes you would make."""


def without_tools(text: str, cwd: Path) -> str:
    """A system message's text as chat only sends it: the built-in prompt at its start, full or
    short, replaced by CHAT_ONLY_PROMPT, and plan mode's note at its end by one that runs no
    command (see the module's docstring); the rest as it is."""
    if text.endswith(PLAN_NOTE):
        text = text[: -len(PLAN_NOTE)] + CHAT_ONLY_PLAN_NOTE
    for built_in in (DEFAULT_SYSTEM_PROMPT, SHORT_SYSTEM_PROMPT):
        prompt = built_in.format(cwd=cwd)
        if text.startswith(prompt):
            return CHAT_ONLY_PROMPT.format(cwd=cwd) + text[len(prompt) :]
    return text


def fixed_budget(window: int) -> int:
    """The tokens the system prompt and the declarations may take of `window`."""
    return max(BUDGET_FLOOR, int(window * BUDGET_SHARE))


def short_system_prompt(settings: Settings, cwd: Path, instructions: Instructions) -> str:
    """The configured systemPrompt (the person's words, whole), else the built-in short one;
    AGENTS.md after it, whole."""
    return instructions.appended_to(settings.system_prompt or SHORT_SYSTEM_PROMPT.format(cwd=cwd))


def fixed_text(system: str, declarations: Sequence[dict[str, Any]]) -> str:
    """What is counted: the system message's text and the declarations' JSON as sent."""
    if not declarations:
        return system
    return system + "\n" + json.dumps(list(declarations), ensure_ascii=False, separators=(",", ":"))


def system_texts(first: dict[str, Any] | None, full: str, short: str) -> tuple[str, str]:
    """The system message's text, and its short form: the built-in prompt `full` at its start
    replaced by `short` (a compaction's summary after it kept). A resumed session's prompt of
    before is sent as it is."""
    content = first.get("content") if first is not None else None
    text = content if isinstance(content, str) else ""
    if not text.startswith(full):
        return text, text
    return text, short + text[len(full) :]


@frozen
class Fit:
    """One form of the fixed prompt: what is sent, and what it costs."""

    system: str  # the system message's text as sent
    declarations: list[dict[str, Any]]
    short: bool  # the short forms
    left_out: tuple[Tool, ...]  # the MCP tools reached through find_tool
    text: str  # what is counted (`fixed_text`)
    tokens: int
    counted: bool  # the server's count, not an estimate
    budget: int


class FixedPrompt:
    """Chooses the form of the fixed prompt for a window, and keeps the server's counts."""

    def __init__(
        self, left_out: Callable[[], Sequence[Tool]], offer: Callable[[Tool], None]
    ) -> None:
        self._left_out = left_out  # the tools find_tool finds now
        self._offer = offer  # how find_tool is made callable (the registry's add_helper)
        self._finder: FindToolTool | None = None
        self.counts: dict[str, int] = {}  # a fixed text -> the server's count of it
        self.ratio = DEFAULT_CHARS_PER_TOKEN  # characters per token, from the last count

    @property
    def finder(self) -> FindToolTool:
        """find_tool, made when tools are first left out (not on the way to ready)."""
        if self._finder is None:
            from mm_tui.tools.find_tool import FindToolTool

            self._finder = FindToolTool(self._left_out)
            self._offer(self._finder)
        return self._finder

    def learn(self, text: str, tokens: int) -> None:
        """The server counted `tokens` for `text` (a fixed text of a `Fit`)."""
        if tokens <= 0:
            return
        self.counts[text] = tokens
        self.ratio = min(8.0, max(1.0, len(text) / tokens))

    async def count(
        self,
        counter: Callable[[str], Awaitable[int | None]],
        now: Callable[[], Fit | None],
        *,
        local: bool = True,
    ) -> None:
        """Count the form `now` gives with `counter` (the server's tokenizer) until it is
        counted: each count may change the form chosen, at most MAX_COUNTS of them. A server
        that is not `local` (a round trip away, maybe with no tokenizer at all) is asked only
        when the count may change the form: an estimate past half the budget; the first
        request's usage counts it otherwise."""
        for _ in range(MAX_COUNTS):
            fit = now()
            if fit is None or fit.counted or (not local and fit.tokens * 2 < fit.budget):
                return
            tokens = await counter(fit.text)
            if tokens is None:
                return
            self.learn(fit.text, tokens)

    def from_usage(self, fit: Fit, prompt_tokens: int, rest: int) -> None:
        """A request sent with `fit` was counted `prompt_tokens` by the server, `rest` of them
        estimated to be the messages after the system prompt: the fixed prompt's count when
        no tokenizer gave one."""
        if not fit.counted and prompt_tokens > rest:
            self.learn(fit.text, prompt_tokens - rest)

    def cost(self, text: str) -> tuple[int, bool]:
        """Tokens of `text`: the server's count, else the estimate; and whether counted."""
        counted = self.counts.get(text)
        if counted is not None:
            return counted, True
        return math.ceil(len(text) / self.ratio), False

    def form(
        self,
        system: str,
        declarations: list[dict[str, Any]],
        budget: int,
        *,
        short: bool,
        left_out: tuple[Tool, ...] = (),
    ) -> Fit:
        text = fixed_text(system, declarations)
        tokens, counted = self.cost(text)
        return Fit(system, declarations, short, left_out, text, tokens, counted, budget)

    def choose(
        self, system: str, short_system: str, tools: Sequence[tuple[Tool, bool]], window: int
    ) -> Fit:
        """The full forms when they fit the budget; else the short ones; else the short ones
        with the MCP tools (`tools`' second item) that do not fit left to find_tool."""
        budget = fixed_budget(window)
        full = self.form(system, [t.declaration() for t, _ in tools], budget, short=False)
        if full.tokens <= budget:
            return full
        shorts = [(tool.short_declaration(), tool, sourced) for tool, sourced in tools]
        short = self.form(short_system, [d for d, _, _ in shorts], budget, short=True)
        if short.tokens <= budget or not any(sourced for _, _, sourced in shorts):
            return short
        return self._packed(short_system, shorts, budget)

    def _packed(
        self, system: str, shorts: list[tuple[dict[str, Any], Tool, bool]], budget: int
    ) -> Fit:
        """The built-in tools, the MCP tools that fit in order, find_tool for the rest."""
        kept = [d for d, _, sourced in shorts if not sourced]
        everything = tuple(tool for _, tool, sourced in shorts if sourced)
        # find_tool's room is kept as if every MCP tool were left out (its description names
        # their servers): it can only be less
        reserved = self.form(
            system, [*kept, self._finder_declaration(everything)], budget, short=True
        )
        room = budget - reserved.tokens
        left: list[Tool] = []
        for declaration, tool, sourced in shorts:
            if not sourced:
                continue
            cost = math.ceil((len(json.dumps(declaration, ensure_ascii=False)) + 1) / self.ratio)
            if cost <= room:
                kept.append(declaration)
                room -= cost
            else:
                left.append(tool)
        out = tuple(left)
        return self.form(
            system, [*kept, self._finder_declaration(out)], budget, short=True, left_out=out
        )

    def _finder_declaration(self, left_out: tuple[Tool, ...]) -> dict[str, Any]:
        """find_tool's declaration when `left_out` are left out."""
        declaration = self.finder.short_declaration()
        function = declaration["function"]
        function["description"] = self.finder.description_for(left_out)
        return declaration
