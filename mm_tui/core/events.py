"""The typed events: the whole contract between the engine and its front ends.

A front end starts a turn and receives these, in order, until `TurnEnded`. They are frozen
dataclasses so that a front end can keep them in its own store without fearing that the engine
changes them afterwards, or send them elsewhere (ACP): every event is plain data, and a front
end answers a `PermissionRequested` with a command, `Engine.answer(agent, call_id, decision)`.
They are made by `@frozen` (core/frozen.py), which is `@dataclass(frozen=True)` without
compiling their methods, for the first frame's sake: see docs/performance.md.
"""

from __future__ import annotations

from dataclasses import field
from enum import StrEnum
from typing import Any, Literal

from mm_tui.core.frozen import frozen

ToolStatus = Literal["ok", "error", "rejected", "cancelled"]


class Decision(StrEnum):
    """The four answers to a permission request, the same in every front end."""

    ALLOW_ONCE = "a"
    ALLOW_SESSION = "s"
    REJECT = "r"
    NEVER = "n"

    @property
    def allows(self) -> bool:
        return self in (Decision.ALLOW_ONCE, Decision.ALLOW_SESSION)


@frozen
class RuleToSave:
    """An allow rule the person gave in a permission box: the pattern (as suggested, or as
    they edited it) and where it is kept: `project` (the project's `.mm/config.yaml`) or
    `user` (their own `~/.config/mm/config.yaml`, every project)."""

    tool: str
    pattern: str
    place: Literal["project", "user"] = "project"


@frozen
class Answer:
    """The person's answer to a permission request: the decision, and with it the words a
    rejection gives the model (`reason`), or the rule an allowing answer adds (`rule`)."""

    decision: Decision
    reason: str = ""
    rule: RuleToSave | None = None


@frozen
class Counters:
    """The counters of one turn, as the reference (docs/tools.md) lists them."""

    commands: int = 0
    file_ops: int = 0
    skills: int = 0
    lsp_calls: int = 0
    mcp_calls: int = 0  # calls of MCP servers' tools (mm's own, beyond the reference's four)

    def parts(self) -> list[str]:
        """The recap's counters that are not zero, spelled as docs/tools.md spells them."""
        out = []
        if self.commands:
            out.append(f"⚙ {self.commands} command(s)")
        if self.file_ops:
            out.append(f"📝 {self.file_ops} file op(s)")
        if self.skills:
            out.append(f"📖 {self.skills} skill(s)")
        if self.lsp_calls:
            out.append(f"🔎 {self.lsp_calls} lsp call(s)")
        if self.mcp_calls:
            out.append(f"🔌 {self.mcp_calls} mcp call(s)")
        return out


@frozen
class Usage:
    """Tokens the model server counted: what was sent (prompt) and what it answered."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@frozen
class BaseEvent:
    """Base of every event. `agent` names the agent that emitted it: None for the top agent,
    the asked agent's name for a child, so that a front end can nest a child's events."""

    agent: str | None = field(default=None, kw_only=True)


@frozen
class TurnStarted(BaseEvent):
    """A turn begins: its number in the session and the request that started it."""

    turn: int
    text: str


@frozen
class Thinking(BaseEvent):
    """Spinner state: `Thinking`, `Composing a tool call`, `Fetching`, `Running`."""

    state: str = "Thinking"


def seconds_text(delay: float) -> str:
    """A wait as a person reads it: `0.6 s` under two seconds, else whole seconds."""
    return f"{delay:.1f} s" if delay < 2 else f"{delay:.0f} s"


@frozen
class ModelRetrying(BaseEvent):
    """The model request failed before any answer and goes again after `delay` seconds:
    `attempt` is the try to come, of `attempts` in all; `reason` is what went wrong."""

    attempt: int
    attempts: int
    delay: float
    reason: str

    @property
    def text(self) -> str:
        """`retrying in 2 s, attempt 2/5: <reason>`, the same in every front end."""
        when = seconds_text(self.delay)
        return f"retrying in {when}, attempt {self.attempt}/{self.attempts}: {self.reason}"


@frozen
class ServerState(BaseEvent):
    """Whether the model server answers, when that changes (and once at start-up when it does
    not): a front end marks its header, since a dead server otherwise looks like a slow one."""

    answering: bool
    message: str = ""


FINISHING = "the server is still finishing the last answer"


@frozen
class ServerFinishing(BaseEvent):
    """The request after a cancelled one waits for its first word longer than the server took
    before: the server is taken to be still writing the cancelled answer, unread (as
    llama-cpp-python does with a non-streamed one), and the watchdog waits for it. Said
    instead of the waiting text until the first word; `seconds` is how long mm waits at most
    before the watchdog stops the turn."""

    seconds: float

    @property
    def text(self) -> str:
        return FINISHING


@frozen
class ComposingToolCall(BaseEvent):
    """A tool call whose arguments are still streaming; `chars` is how much arrived so far."""

    index: int
    name: str
    chars: int
    state: str = "Composing a tool call"


@frozen
class TextDelta(BaseEvent):
    """The next piece of the answer's text."""

    text: str


@frozen
class ThoughtDelta(BaseEvent):
    """The next piece of the model's reasoning."""

    text: str


FROM_TEXT = "read from the answer's text"
"""What every front end says beside a call the model wrote in its text (`ToolCallStarted.from_text`)."""


@frozen
class ToolCallStarted(BaseEvent):
    """The model asked for a tool call, now complete: its title, kind, arguments, display
    line and the files it touches. `from_text`: the model wrote the call in its answer's text
    and mm read it from there (engine/text_calls.py); front ends say so beside the call."""

    call_id: str
    tool: str
    title: str
    kind: str
    arguments: dict[str, Any]
    display: str = ""
    locations: tuple[str, ...] = ()
    from_text: bool = False


@frozen
class ToolCallRunning(BaseEvent):
    """The call runs now: no question stands before it any more (yolo, a standing decision, an
    allowed answer, or nothing to ask). Front ends that show a call's progress (ACP's
    `in_progress`) take it from here instead of guessing the engine's rule."""

    call_id: str
    tool: str


@frozen
class ToolProgress(BaseEvent):
    """A running call says how far it is (an MCP server's progress notification): a person
    waiting on a long call sees it move. `progress` grows; `total` when it is known; `message`
    is the tool's own words (a server's: front ends make it safe to show)."""

    call_id: str
    tool: str
    progress: float
    total: float | None = None
    message: str = ""

    @property
    def text(self) -> str:
        """`3/5`, `40%` of a total that is not a count, or `3`; then the message."""
        if self.total and float(self.total).is_integer() and float(self.progress).is_integer():
            done = f"{self.progress:g}/{self.total:g}"
        elif self.total:
            done = f"{min(100.0, 100 * self.progress / self.total):.0f}%"
        else:
            done = f"{self.progress:g}"
        message = " ".join(self.message.split())[:120]
        return f"{done} · {message}" if message else done


@frozen
class ToolCallFinished(BaseEvent):
    """`output` is what the front ends show: the result the model got, or the tool's own
    display of it when it has one (ask_agent: `<agent> answered (N characters)`)."""

    call_id: str
    tool: str
    status: ToolStatus
    output: str
    elapsed: float
    diff: str | None = None


@frozen
class PermissionRequested(BaseEvent):
    """A call waits for the person: the front end answers with `Engine.answer(agent, call_id,
    decision)`; the engine says `ToolCallRunning` when the call then runs."""

    call_id: str
    tool: str
    title: str
    details: str
    pattern: str = ""  # the rule to offer for calls like this one ("" when none fits)


@frozen
class AgentStarted(BaseEvent):
    """An asked agent starts on a task. `prompt` is the task as it was handed over (without
    the conversation sent along), for line mode's `🗣 ask_agent:` line."""

    name: str
    title: str
    model: str
    provider: str
    asked_by: str | None = None
    prompt: str = ""


@frozen
class AgentFinished(BaseEvent):
    """An asked agent's session closes: the end of what `AgentStarted` opened."""

    name: str
    title: str
    model: str
    provider: str
    asked_by: str | None = None


def context_text(
    used: int,
    window: int | None,
    estimated: bool = False,
    fixed: int = 0,
    fixed_estimated: bool = False,
) -> str:
    """`ctx 1,234 / 4,096 (30%)`, or `ctx 1,234` while the window is unknown: the same words in
    the header, the recap and ACP. `~1,234`: no count of the server's is under the figure yet
    (before the first answer of a session, after a compaction), it is the estimate alone.
    `· fixed 712`: the part of it that every request carries (the system prompt and the tool
    declarations), `~712` while estimated."""
    figure = f"{'~' if estimated else ''}{used:,}"
    if not window:
        return f"ctx {figure}"
    text = f"ctx {figure} / {window:,} ({used * 100 // window}%)"
    if fixed:
        text += f" · fixed {'~' if fixed_estimated else ''}{fixed:,}"
    return text


@frozen
class ContextUsage(BaseEvent):
    """How full the model's context is: tokens of the history as the next request would send it
    (the server's count of the last request plus an estimate of what was added since), against
    the window the server really runs the model with (None while unknown). Sent when the window
    is learned, after every model answer and tool result, and after a shortening or compaction."""

    used: int
    window: int | None
    # where the window came from: "llama.cpp /props", "contextWindow in the config"…
    source: str = ""
    estimated: bool = False  # no count of the server's under it yet: shown `~1,234`
    # of `used`, the system prompt and the tool declarations, which every request carries
    fixed: int = 0
    fixed_estimated: bool = False  # no count of the server's for it yet: shown `~712`

    @property
    def text(self) -> str:
        return context_text(
            self.used, self.window, self.estimated, self.fixed, self.fixed_estimated
        )


@frozen
class HistoryShortened(BaseEvent):
    """mm shortened old tool outputs in what it sends, to keep the request inside the window;
    the session journal keeps them whole. `message` is the notice line for a person."""

    outputs: int
    chars_cut: int
    message: str


@frozen
class HistoryCompacted(BaseEvent):
    """The history was replaced by the model's summary of it (`/compact`, or automatically near
    the window). The messages it replaces stay in the journal and on screen; `summary` is what
    the model will see from now on."""

    summary: str
    replaced: int  # messages summarised
    auto: bool
    tokens_before: int = 0
    tokens_after: int = 0

    @property
    def title(self) -> str:
        """The one line a front end shows for it (the summary folds beneath)."""
        how = "automatically, near the context window" if self.auto else "by /compact"
        tokens = ""
        if self.tokens_before:
            tokens = f", {self.tokens_before:,} → {self.tokens_after:,} tokens"
        from mm_tui.core.text import counted

        return f"compacted {counted(self.replaced, 'message')} into a summary {how}{tokens}"


StopReason = Literal["end_turn", "max_turns", "cancelled", "error", "loop_detected"]


@frozen
class TurnEnded(BaseEvent):
    """The last event of a turn: its counters, time, tokens and why it stopped."""

    turn: int
    counters: Counters
    elapsed: float
    usage: Usage
    stop_reason: StopReason
    error: str | None = None
    context_used: int = 0  # tokens in the model's context after the turn
    context_window: int | None = None  # the recap shows the context only when this is known
    context_estimated: bool = False  # the server counted none of it (it reports no usage)
    context_fixed: int = 0  # of context_used, the system prompt and the tool declarations
    context_fixed_estimated: bool = False

    def recap(self, *, token_detail: bool = False) -> str:
        """The line that closes a turn, in every front end: the counters that are not zero,
        the turn's time and tokens (`token_detail`: split into in and out), and `cancelled`
        when it was."""
        parts = self.counters.parts()
        parts.append(f"{self.elapsed:.1f}s")
        usage = self.usage
        if usage.total_tokens:
            tokens = f"{usage.total_tokens:,} tokens"
            if token_detail:
                tokens += f" ({usage.prompt_tokens:,} in, {usage.completion_tokens:,} out)"
            parts.append(tokens)
        if self.context_used and self.context_window:
            parts.append(
                context_text(
                    self.context_used,
                    self.context_window,
                    self.context_estimated,
                    self.context_fixed,
                    self.context_fixed_estimated,
                )
            )
        if self.stop_reason == "cancelled":
            parts.append("cancelled")
        return " · ".join(parts)


def turn_context(usage: ContextUsage | None) -> dict[str, Any]:
    """A `TurnEnded`'s context fields, from how full the context is at the turn's end."""
    if usage is None:
        return {}
    return {
        "context_used": usage.used,
        "context_window": usage.window,
        "context_estimated": usage.estimated,
        "context_fixed": usage.fixed,
        "context_fixed_estimated": usage.fixed_estimated,
    }


StepState = Literal["pending", "in_progress", "done"]


@frozen
class TodoStep:
    """A step of the model's task list (the todo tool) and its state."""

    step: str
    state: StepState


@frozen
class TodoUpdated(BaseEvent):
    """The model wrote its task list again (the todo tool): the whole list, in order."""

    steps: tuple[TodoStep, ...]


Mode = Literal["ask", "auto", "plan"]
"""The session's mode: who decides what runs (engine/permissions.py)."""


@frozen
class ModeChanged(BaseEvent):
    """The mode changed (Shift+Tab, `/mode`, ACP's session/set_mode)."""

    mode: Mode
    previous: Mode

    @property
    def text(self) -> str:
        return f"mode: {self.mode} — {MODE_WORDS[self.mode]}"


MODE_WORDS: dict[Mode, str] = {
    "ask": "a command or a file change asks first",
    "auto": "every tool call runs without asking",
    "plan": "the model looks and plans; no file changes, every command asked",
}
"""What each mode means, in the words the front ends show."""


@frozen
class ModelChanged(BaseEvent):
    """`/model`: the requests from now on go to `model` (on the same server); `previous` is
    the one before."""

    model: str
    previous: str | None
    provider: str

    @property
    def text(self) -> str:
        return model_change_text(self.model, self.previous)


def model_change_text(model: str, previous: str | None) -> str:
    """The line a model change shows, live and in a resumed session."""
    return f"model: {model}" + (f" (was {previous})" if previous else "")


@frozen
class ModelProbed(BaseEvent):
    """The probe of the model in use (engine/model_probe.py) changed how mm asks it: `text`
    says how, on one line (mm's own words)."""

    text: str


@frozen
class FilesRestored(BaseEvent):
    """`/undo` put the project's files back as they were before a turn (or, `redo`, as they
    were before the last /undo); `text` says what it did, on one line."""

    text: str
    redo: bool = False


@frozen
class RuleAdded(BaseEvent):
    """A rule the person gave in a permission box holds for the rest of the session; `path` is
    the file it was written to, or "" with `warning` saying why it was not."""

    tool: str
    pattern: str
    place: Literal["project", "user"]
    path: str = ""
    warning: str = ""

    @property
    def text(self) -> str:
        """`bash "git log *" is allowed from now on (saved to .mm/config.yaml)`."""
        said = f'{self.tool} "{self.pattern}" is allowed from now on'
        return f"{said} (saved to {self.path})" if self.path else f"{said}; {self.warning}"


@frozen
class EngineError(BaseEvent):
    """Something went wrong outside a tool call (the model connection, a guard, the session
    file). `level` is "warning" when the turn goes on regardless (a session file that cannot
    be written), said here rather than read back from the message's `[warning` prefix."""

    where: str
    message: str
    level: Literal["error", "warning"] = "error"


Event = (
    TurnStarted
    | Thinking
    | ModelRetrying
    | ServerState
    | ServerFinishing
    | ComposingToolCall
    | TextDelta
    | ThoughtDelta
    | ToolCallStarted
    | ToolCallRunning
    | ToolProgress
    | ToolCallFinished
    | PermissionRequested
    | AgentStarted
    | AgentFinished
    | ContextUsage
    | HistoryShortened
    | HistoryCompacted
    | TurnEnded
    | ModelChanged
    | ModelProbed
    | ModeChanged
    | TodoUpdated
    | FilesRestored
    | RuleAdded
    | EngineError
)
"""Every event there is. A front end takes them with `match` and ends with `assert_never`, so
that a new kind of event is a type error in each front end that forgets it, not an event
silently dropped."""
