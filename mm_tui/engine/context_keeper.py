"""The model's context window, kept for an engine: what the window is (the config, the server,
or a refusal), how full it is (`ContextUsage`), room made before a request that would not fit
(old outputs shortened, then the conversation compacted), a fair share for each tool result,
and `/compact`. The meter (`context.py`) measures; this decides what to do about it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mm_tui.config import Settings
from mm_tui.core.events import ContextUsage, EngineError, HistoryShortened, Thinking
from mm_tui.core.redact import Redactor
from mm_tui.engine.ask_style import AskStyle
from mm_tui.engine.context import SHRINK_TO, ContextMeter
from mm_tui.engine.context_window import ContextWindow, window_from_error
from mm_tui.engine.fixed_prompt import Fit, FixedPrompt, system_texts
from mm_tui.engine.model_stream import CONTEXT_ADVICE, ModelClient, ModelError
from mm_tui.engine.permissions import PLAN_NOTE, Permissions
from mm_tui.engine.plain_http import is_loopback
from mm_tui.engine.recorder import SessionRecorder
from mm_tui.engine.server_watch import ServerWatch
from mm_tui.engine.turn_state import Emit, StopTurn
from mm_tui.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from mm_tui.engine.ollama_window import KeptWindow

UNKNOWN_WINDOW = (
    "the model's context window is unknown: mm learns it from the server's first refusal of a "
    "request too big; set contextWindow in the config to tell it"
)

TODO_TOOL = "todo"
TODO_WINDOW = 16384  # tokens: the least window `todoTool: auto` declares the todo tool to


class ContextKeeper:
    def __init__(
        self,
        settings: Settings,
        client: ModelClient,
        registry: ToolRegistry,
        recorder: SessionRecorder,
        *,
        redactor: Redactor,
        server: ServerWatch,
        system_prompt: Callable[[], str],
        permissions: Permissions | None = None,
        short_system_prompt: Callable[[], str] | None = None,
    ) -> None:
        self.settings = settings
        self.permissions = permissions or Permissions.from_settings(settings)
        self.client = client
        self.registry = registry
        self.recorder = recorder
        self.redactor = redactor
        self.server = server
        self.system_prompt = system_prompt
        self.short_system_prompt = short_system_prompt or system_prompt
        self.meter = ContextMeter()
        self.asking = AskStyle()  # as the model's probe found: the turn's requests, compaction's
        # the system prompt and the tools within a budget; find_tool finds the tools left out
        self.fixed = FixedPrompt(lambda: self.fit.left_out if self.fit else (), registry.add_helper)
        self.fit: Fit | None = None  # the form the next request sends (None: window unknown)
        self.window_unread = False  # the server did not answer at start-up: ask it later
        self.kept: KeptWindow | None = None  # what Ollama was asked to keep (contextWindow)
        self.window_warnings: list[str] = []  # the last learn_window's notes that are warnings
        self._journal_unread = False  # a reopened session's count, read once the window is known
        self._declarations: list[dict[str, Any]] | None = None
        self._declared: object = None  # the registry's version the declarations are of
        # the system message and the copy sent (short, plan mode), made once (encoded once)
        self._sent_first: tuple[dict[str, Any], object, dict[str, Any]] | None = None

    def tools(self) -> list[dict[str, Any]]:
        """The tools' declarations, made again only when the registry (an MCP server ready or
        stopped), the window or the system message changed, or a count came: the meter measures
        each list once. Each request declares the tools ready then, in the form the fixed
        prompt's budget allows (engine/fixed_prompt.py)."""
        window = self.meter.window
        messages = self.recorder.session.messages
        first = messages[0] if messages and messages[0].get("role") == "system" else None
        version = (
            self.registry.version,
            self.permissions.mode,
            self._todo_room(),
            window and window.tokens,
            len(self.fixed.counts),
            first,
        )
        if self._declarations is None or version != self._declared:
            hides = self.permissions.hides
            hidden = set() if version[2] else {TODO_TOOL}
            tools = [
                (tool, sourced)
                for tool, sourced in self.registry.declared_tools()
                if not hides(tool.name) and tool.name not in hidden
            ]
            if window is None:
                self.fit = None
                self._declarations = [tool.declaration() for tool, _ in tools]
            else:
                full, short = system_texts(first, self.system_prompt(), self.short_system_prompt())
                self.fit = self.fixed.choose(full, short, tools, window.tokens)
                self._declarations = self.fit.declarations
            self._declared = version
        return self._declarations

    async def count_fixed(self) -> None:
        """The fixed prompt counted by the server's tokenizer, before a request, once a form."""
        counter = getattr(self.client, "count_tokens", None)
        if counter is not None:
            local = is_loopback(getattr(self.client, "base_url", ""))
            await self.fixed.count(counter, self.fit_now, local=local)

    def fit_now(self) -> Fit | None:
        """The form of the fixed prompt the next request sends (None: the window unknown)."""
        self.tools()
        return self.fit

    def _todo_room(self) -> bool:
        """Whether the todo tool is declared: `todoTool: auto` only to a model whose window is
        known and at least TODO_WINDOW tokens. A small local model with a small window spends
        its turns writing task lists instead of working (measured on SmolLM2-135M: it called
        todo over and over until the loop detector stopped it), and the declaration costs
        a few hundred tokens of a window that has few."""
        if self.settings.todo_tool != "auto":
            return True
        window = self.meter.window
        return window is not None and window.tokens >= TODO_WINDOW

    def messages(self) -> list[dict[str, Any]]:
        """The history as the next request sends it: the system message short when the budget
        wants it, saying so in plan mode (a copy: the journal keeps the history as it was)."""
        messages = self.recorder.session.messages
        if not messages or messages[0].get("role") != "system":
            return messages
        fit = self.fit_now()
        short = fit.system if fit is not None and fit.short else None
        plan = self.permissions.mode == "plan"
        if short is None and not plan:
            return messages
        first = messages[0]
        sent = self._sent_first
        if sent is None or sent[0] is not first or sent[1] != (short, plan):
            content = first.get("content")
            text = short if short is not None else content if isinstance(content, str) else ""
            text += PLAN_NOTE if plan else ""
            sent = self._sent_first = (first, (short, plan), {**first, "content": text})
        return [sent[2], *messages[1:]]

    # -- the window ----------------------------------------------------------------------------

    async def learn_window(self, asked: Awaitable[ContextWindow | None] | None = None) -> list[str]:
        """Ask the server for the model's context window (the config's `contextWindow` wins,
        and Ollama is asked to keep it: `_keep_window`); returns the start-up notes that say
        what was learned (those that are warnings also in `window_warnings`). `asked`: the
        client's `read_context_window()` begun already (start-up's, beside the tools)."""
        self.window_warnings = []
        kept: list[str] = []
        if self.settings.context_window:
            self.meter.window = ContextWindow(
                self.settings.context_window, "contextWindow in the config"
            )
            kept = await self._keep_window(self.settings.context_window)
        else:
            reader = getattr(self.client, "read_context_window", None)
            if reader is None:  # the demo model: no window to keep
                return []
            if self.server.answering is False:  # nobody to ask: asked after the first answer
                self.window_unread = True
                return []
            try:
                self.meter.window = await (asked if asked is not None else reader())
            except Exception:  # noqa: BLE001 - never a reason not to start
                self.meter.window = None
        window = self.meter.window
        if window is None:
            return [UNKNOWN_WINDOW]
        if self._journal_unread:  # the form sent, and so what the count was of, is known now
            self.count_from_journal()
        notes = [f"context window: {window.tokens:,} tokens ({window.source})"]
        if window.note:
            notes.append(window.note)
        return notes + kept

    async def _keep_window(self, tokens: int) -> list[str]:
        """Ollama runs a model with its own default context unless told, and a request that
        tells it otherwise reloads the model: it is asked to keep `tokens` for the session
        (engine/ollama_window.py). The notes, and the window lowered to what Ollama has."""
        from mm_tui.engine.ollama_window import keep_window

        served = getattr(self.client, "served", None)
        if not isinstance(served, dict) or self.server.answering is False:
            self.window_unread = isinstance(served, dict)  # Ollama asked after an answer
            return []
        model, base_url = self.client.model, self.client.base_url
        kept = await keep_window(
            base_url, model, tokens, api_key=getattr(self.client, "api_key", None)
        )
        self.kept = kept
        if kept is None:
            served.pop(model, None)
            return []
        served[model] = kept.served
        self._lower_to(kept)
        self.window_warnings = list(kept.warnings)
        return kept.notes + kept.warnings

    def _lower_to(self, kept: KeptWindow) -> None:
        """What Ollama really runs the model with, when less than the config's window."""
        if kept.loaded is not None and kept.loaded < kept.tokens:
            self.meter.window = ContextWindow(kept.loaded, "Ollama /api/ps")
        elif kept.tokens < (self.settings.context_window or 0):
            self.meter.window = ContextWindow(kept.tokens, "Ollama /api/show")

    async def _check_kept(self, kept: KeptWindow, emit: Emit | None) -> None:
        """After the first answer: whether the runner it loaded has the window (once)."""
        from mm_tui.engine.ollama_window import check_loaded

        api_key = getattr(self.client, "api_key", None)
        warning = await check_loaded(self.client.base_url, kept, api_key=api_key)
        self._lower_to(kept)
        if warning is not None and emit is not None:
            emit(EngineError("context window", f"[warning: {warning}]", level="warning"))

    def usage(self) -> ContextUsage | None:
        """How full the model's context is now, or None while the window is unknown (the
        header shows nothing then)."""
        window = self.meter.window
        if window is None:
            return None
        used = self.meter.estimate(self.messages(), self.tools())
        fit = self.fit
        return ContextUsage(
            used=used,
            window=window.tokens,
            source=window.source,
            estimated=not self.meter.counted,
            fixed=fit.tokens if fit is not None else 0,
            fixed_estimated=fit is not None and not fit.counted,
        )

    def report(self, emit: Emit | None) -> None:
        usage = self.usage()
        if usage is not None and emit is not None:
            emit(usage)

    async def observed(self, prompt_tokens: int, sent: int, emit: Emit | None = None) -> None:
        """An answer came for a request of `sent` characters that the server counted as
        `prompt_tokens`; the window is asked now if the server was down at start-up, and
        Ollama's loaded window checked if start-up found the model not loaded."""
        if self.window_unread:
            self.window_unread = False
            await self.learn_window()
            for warning in self.window_warnings:  # start-up's warnings, said now (a copy refused)
                if emit is not None:
                    emit(EngineError("context window", f"[warning: {warning}]", level="warning"))
        elif self.kept is not None and self.kept.unchecked:  # (an answer of the copy's)
            await self._check_kept(self.kept, emit)
        # without a tokenizer to ask, a turn's first request counts the fixed prompt: the
        # server's count less the rest (the user's message), estimated
        messages = self.messages()
        if self.fit is not None and len(messages) > 1 and messages[-1].get("role") == "user":
            self.fixed.from_usage(self.fit, prompt_tokens, self.meter.estimate_alone(messages[1:]))
        self.meter.observed(prompt_tokens, sent)

    def count_from_journal(self) -> None:
        """A reopened session: its last turn's end said how full the context was (the server's
        count, and an estimate of what came after it); the count goes on from there, so that
        the header shows on resume what the last turn showed, not a fresh guess at the
        default characters per token. Once the window is known: the form sent depends on it."""
        session = self.recorder.session
        self._journal_unread = self.meter.window is None
        if self._journal_unread or not session.turns:
            return
        last = session.turns[-1]
        if last.context_estimated:
            return  # an estimate at the default ratio, as a fresh one would be: no count under it
        if last.context_used is not None and last.context_used > 0:
            self.meter.observed(last.context_used, self.meter.chars(self.messages(), self.tools()))

    def learn_from_refusal(self, refused: ModelError, sent: int, emit: Emit) -> bool:
        """The server refused a request of `sent` characters as too big: take the window it
        states, count that request as over it, and say whether mm can make room now (it cannot
        when neither the server nor anything before said the window: nothing is guessed)."""
        stated = window_from_error(refused.server_text or refused.message)
        if stated is not None:
            self.meter.window = ContextWindow(stated, "the server's refusal")
        window = self.meter.window
        if window is None:
            return False
        # The request was over the window whatever mm counted: count it so from now on (but a
        # token is at least two characters: a server's odd count must not make every later
        # request look too big).
        messages = self.recorder.session.messages
        tokens = max(window.tokens + 1, self.meter.estimate(messages, self.tools()))
        self.meter.observed(min(tokens, sent // 2), sent)
        self.report(emit)
        return True

    # -- making room -----------------------------------------------------------------------------

    async def make_room(self, emit: Emit) -> None:
        """Before a request: when it would not fit the window (the answer's reserve kept free),
        shorten old tool outputs, then compact, then give up with the overflow advice."""
        budget = self.meter.budget
        window = self.meter.window
        if budget is None or window is None:
            return
        await self.count_fixed()
        session, tools = self.recorder.session, self.tools()
        if self.meter.estimate(self.messages(), tools) <= budget:
            return
        tried = "shortening old tool outputs" if self._shorten(emit, budget, tools) else ""
        # Compacting helps only a history with more than the system prompt and the question.
        if self.meter.estimate(self.messages(), tools) > budget and len(session.messages) > 2:
            tried = "shortening and compacting"
            emit(Thinking(state="Compacting the conversation"))
            try:
                await self.compact(emit, auto=True)
            except (ModelError, TimeoutError) as exc:
                detail = exc.message if isinstance(exc, ModelError) else "no answer in time"
                raise StopTurn(
                    "error",
                    f"[error: the conversation no longer fits the model's {window.tokens:,}-token "
                    f"context, and compacting it failed ({detail}) — {CONTEXT_ADVICE}]",
                    "generation",
                ) from None
        used = self.meter.estimate(self.messages(), tools)
        if used > budget:
            after = f" even after {tried}" if tried else ""
            raise StopTurn(
                "error",
                f"[error: the request needs about {used:,} tokens{after}, more than the model's "
                f"{window.tokens:,}-token context leaves for it — {CONTEXT_ADVICE}]",
                "generation",
            )
        self.report(emit)

    def _shorten(self, emit: Emit, budget: int, tools: list[dict[str, Any]]) -> bool:
        """Old tool outputs cut to make room; whether any was."""
        session = self.recorder.session
        messages = session.messages
        room = self.meter.room(self.messages()[:1], tools) or 0
        keep = self.meter.keep_chars(room)
        target = int(budget * SHRINK_TO)
        done = self.meter.shorten_old_outputs(messages, tools, target, keep, session.shorten)
        if not done.outputs:
            return False
        assert self.meter.window is not None
        self.recorder.save(emit)
        emit(
            HistoryShortened(
                outputs=done.outputs,
                chars_cut=done.chars_cut,
                message=f"shortened {done.outputs} old tool output(s) by "
                f"{done.chars_cut:,} characters to fit the model's "
                f"{self.meter.window.tokens:,}-token context; the session journal keeps them whole",
            ),
        )
        return True

    def fair_share(self, tool: str, emit: Emit) -> None:
        """A tool result takes at most a quarter of the window: a 30,000-character output would
        fill a 2,048-token model by itself. The model gets its head and tail; the journal and
        the window keep it whole."""
        session = self.recorder.session
        messages = session.messages
        room = self.meter.room(self.messages()[:1], self.tools())
        share = None if room is None else self.meter.fair_share_chars(room)
        message = messages[-1]
        output = message.get("content")
        if share is None or not isinstance(output, str) or len(output) <= share:
            return
        shorter = self.meter.cut(output, share)
        cut = len(output) - len(shorter)
        session.shorten(len(messages) - 1, {**message, "content": shorter}, cut)
        window = self.meter.window
        assert window is not None
        emit(
            HistoryShortened(
                outputs=1,
                chars_cut=cut,
                message=f"{tool}'s output of {len(output):,} characters goes to the model cut "
                f"to {len(shorter):,}, a fair share of its {window.tokens:,}-token context; the "
                "session journal keeps it whole",
            ),
        )
        self.report(emit)

    # -- compaction --------------------------------------------------------------------------

    async def compact(self, emit: Emit | None = None, *, auto: bool = False) -> str:
        """The model's summary replaces the history (engine/compaction.py)."""
        from mm_tui.engine import compaction

        return await compaction.compact(self, emit, auto=auto)
