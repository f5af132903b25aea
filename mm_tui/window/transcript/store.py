"""The transcript as plain data: what window mode shows, kept whole for the whole session.

`Transcript.apply(event)` is the one place where engine events become changes of the
transcript; it knows nothing of Textual, so tests drive it without a terminal, and the window's
`TranscriptView` only renders what it holds. Items are never dropped: the view renders the ones
near the screen from this store, so ten thousand tool lines cost what the visible ones cost.

`transcript_from_records` redraws a resumed session from its journal's records: the same items
a live session made, from what the records kept (each call's real status, time and title), so
that a session looks the same after `--resume` or `/sessions` as it did while it ran.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, assert_never

from mm_tui.core.text import agent_name, agent_title, one_line

if TYPE_CHECKING:
    from collections.abc import Iterable

    from mm_tui.core.conversation import Call
    from mm_tui.core.events import Event, HistoryCompacted


class Item:
    """One entry of the transcript. `version` grows with every change, so a renderer can cache
    what it drew for a version and a width. `id` is the item's place in `Transcript.items`,
    counted from 1: the view finds an item's cached lines by it, so it must start again at 1
    whenever the store is emptied.

    Items are plain classes with slots rather than dataclasses, which are slow to make on the
    way to the first frame (docs/performance.md); slots also keep ten thousand items small.
    """

    __slots__ = ("id", "agent", "version")

    def __init__(self, *, id: int = 0, agent: str | None = None, version: int = 0) -> None:  # noqa: A002
        self.id = id
        self.agent = agent
        self.version = version

    def __repr__(self) -> str:
        names = [n for cls in type(self).__mro__ for n in getattr(cls, "__slots__", ())]
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in names if not n.startswith("_"))
        return f"{type(self).__name__}({shown})"

    @property
    def foldable(self) -> bool:
        return False

    def touch(self) -> None:
        self.version += 1


class UserItem(Item):
    __slots__ = ("text",)

    def __init__(self, *, text: str = "", **base: Any) -> None:
        super().__init__(**base)
        self.text = text


class AnswerItem(Item):
    """An answer as it streams: pieces are joined only when read, so a fast stream costs an
    append per chunk."""

    __slots__ = ("pieces", "done", "label", "_text", "_joined")

    def __init__(
        self,
        *,
        pieces: list[str] | None = None,
        done: bool = False,
        label: str | None = None,  # `‣ mm [title]` above an asked agent's answer
        **base: Any,
    ) -> None:
        super().__init__(**base)
        self.pieces = [] if pieces is None else pieces
        self.done = done
        self.label = label
        self._text = ""
        self._joined = 0

    @property
    def text(self) -> str:
        if self._joined != len(self.pieces):
            self._text = "".join(self.pieces)
            self.pieces[:] = [self._text] if self._text else []
            self._joined = len(self.pieces)
        return self._text


class ThoughtItem(Item):
    __slots__ = ("pieces", "done", "folded")

    def __init__(
        self,
        *,
        pieces: list[str] | None = None,
        done: bool = False,
        folded: bool = False,
        **base: Any,
    ) -> None:
        super().__init__(**base)
        self.pieces = [] if pieces is None else pieces
        self.done = done
        self.folded = folded

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    @property
    def foldable(self) -> bool:
        return True


class ToolItem(Item):
    timed = True  # the line shows the call's time at its right

    __slots__ = (
        "call_id",
        "tool",
        "title",
        "kind",
        "arguments",
        "status",
        "output",
        "diff",
        "started",
        "elapsed",
        "folded",
        "waiting",
        "from_text",
    )

    def __init__(
        self,
        *,
        call_id: str = "",
        tool: str = "",
        title: str = "",  # `bash  <command>`
        kind: str = "other",
        arguments: dict[str, Any] | None = None,
        status: str = "running",  # running, ok, error, rejected, cancelled
        output: str = "",
        diff: str | None = None,
        started: float = 0.0,  # by the app's clock
        elapsed: float | None = None,
        folded: bool = True,
        waiting: bool = False,  # a permission request is pending
        from_text: bool = False,  # the model wrote the call in its text (events.FROM_TEXT)
        **base: Any,
    ) -> None:
        super().__init__(**base)
        self.call_id = call_id
        self.tool = tool
        self.title = title
        self.kind = kind
        self.arguments = {} if arguments is None else arguments
        self.status = status
        self.output = output
        self.diff = diff
        self.started = started
        self.elapsed = elapsed
        self.folded = folded
        self.waiting = waiting
        self.from_text = from_text

    @property
    def foldable(self) -> bool:
        return True

    @property
    def running(self) -> bool:
        return self.status == "running"


class CompactionItem(ToolItem):
    """The history replaced by the model's summary of it. Drawn as a finished tool line (one
    line, the summary folded beneath it, opened with Enter or a click): that is what it is to a
    reader, something mm did, with a result to look at when wanted. It has no time of its own."""

    timed = False

    __slots__ = ()

    def __init__(self, *, title: str = "", summary: str = "", **base: Any) -> None:
        super().__init__(tool="compact", title=title, status="ok", output=summary, **base)


def compaction_item(event: HistoryCompacted, agent: str | None = None) -> CompactionItem:
    return CompactionItem(agent=agent, title=event.title, summary=event.summary)


class RecapItem(Item):
    __slots__ = ("text", "stop_reason")

    def __init__(self, *, text: str = "", stop_reason: str = "end_turn", **base: Any) -> None:
        super().__init__(**base)
        self.text = text
        self.stop_reason = stop_reason


class AgentHeaderItem(Item):
    __slots__ = ("title", "model", "provider", "asked_by")

    def __init__(
        self,
        *,
        title: str = "",
        model: str = "",
        provider: str = "",
        asked_by: str | None = None,
        **base: Any,
    ) -> None:
        super().__init__(**base)
        self.title = title
        self.model = model
        self.provider = provider
        self.asked_by = asked_by


class NoticeItem(Item):
    __slots__ = ("text", "level")

    def __init__(
        self, *, text: str = "", level: str = "error", **base: Any
    ) -> None:  # level: error, warning, info
        super().__init__(**base)
        self.text = text
        self.level = level


WAITING = "Waiting for your decision (a/s/r/n)"


class Transcript:
    """The store. `apply` returns the items an event changed or added, for the view to redraw."""

    def __init__(self, clock: Any = None) -> None:
        self.items: list[Item] = []
        self.clock = clock or time.monotonic
        self._next_id = 0
        self._tools: dict[tuple[str | None, str], ToolItem] = {}
        self._answer: dict[str | None, AnswerItem] = {}
        self._thought: dict[str | None, ThoughtItem] = {}
        self._agent_titles: dict[str, str] = {}
        self.state: str | None = None  # spinner state shown beside the prompt; None when idle

    def clear(self) -> None:
        """A new session: nothing of the old one stays in view. Ids count from 1 again, since
        an item's id is its place in `items` (the view's caller then calls `reset`)."""
        self.items = []
        self._next_id = 0
        self._tools.clear()
        self._answer.clear()
        self._thought.clear()
        self._agent_titles.clear()
        self.state = None

    def add(self, item: Item) -> Item:
        self._next_id += 1
        item.id = self._next_id
        self.items.append(item)
        return item

    def tool(self, call_id: str, agent: str | None = None) -> ToolItem | None:
        return self._tools.get((agent, call_id))

    def _close_streams(self, agent: str | None) -> list[Item]:
        changed: list[Item] = []
        for table in (self._answer, self._thought):
            item = table.pop(agent, None)
            if item is not None:
                item.done = True
                if isinstance(item, ThoughtItem):  # what comes next takes its place
                    item.folded = True
                item.touch()
                changed.append(item)
        return changed

    def apply(self, event: Event) -> list[Item]:
        # The events module loads on the first event, not before the first frame.
        from mm_tui.core.events import (
            AgentFinished,
            AgentStarted,
            ComposingToolCall,
            ContextUsage,
            EngineError,
            FilesRestored,
            HistoryCompacted,
            HistoryShortened,
            ModeChanged,
            ModelChanged,
            ModelProbed,
            ModelRetrying,
            PermissionRequested,
            RuleAdded,
            ServerFinishing,
            ServerState,
            TextDelta,
            Thinking,
            ThoughtDelta,
            TodoUpdated,
            ToolCallFinished,
            ToolCallRunning,
            ToolCallStarted,
            ToolProgress,
            TurnEnded,
            TurnStarted,
        )

        agent = event.agent
        match event:
            case TextDelta():
                answer = self._answer.get(agent)
                changed: list[Item] = []
                if answer is None:
                    thought = self._thought.pop(agent, None)
                    if thought is not None:  # the answer starts: reasoning folds away
                        thought.done = True
                        thought.folded = True
                        thought.touch()
                        changed.append(thought)
                    label = None
                    if agent is not None:
                        label = f"‣ {agent_name(self._agent_titles.get(agent, agent))}"
                    answer = AnswerItem(agent=agent, label=label)
                    self.add(answer)
                    self._answer[agent] = answer
                answer.pieces.append(event.text)
                answer.touch()
                self.state = None if agent is None else self.state
                changed.append(answer)
                return changed
            case ThoughtDelta():
                thought = self._thought.get(agent)
                if thought is None:
                    thought = ThoughtItem(agent=agent)
                    self.add(thought)
                    self._thought[agent] = thought
                thought.pieces.append(event.text)
                thought.touch()
                return [thought]
            case Thinking():
                if agent is None:
                    self.state = event.state
                return []
            case ComposingToolCall():
                if agent is None:
                    self.state = event.state
                return []
            case ModelRetrying():
                if agent is None:  # the status line: `Retrying in 2 s, attempt 2/5: <reason>`
                    self.state = event.text[:1].upper() + event.text[1:]
                return []
            case ServerState():
                return []  # the header shows it
            case ServerFinishing():
                if agent is None:  # the status line, until the first word comes
                    self.state = event.text[:1].upper() + event.text[1:]
                return []
            case TurnStarted():
                if agent is not None:
                    return []
                self.state = "Thinking"
                return [self.add(UserItem(text=event.text))]
            case ToolCallStarted():
                changed = self._close_streams(agent)
                title = agent_title(agent, event.title)
                item = ToolItem(
                    agent=agent,
                    call_id=event.call_id,
                    tool=event.tool,
                    title=title,
                    kind=event.kind,
                    arguments=dict(event.arguments),
                    started=self.clock(),
                    from_text=event.from_text,
                )
                self._tools[(agent, event.call_id)] = item
                if agent is None:
                    self.state = "Fetching" if event.tool == "fetch_content" else "Running"
                changed.append(self.add(item))
                return changed
            case ToolCallRunning():
                # its time counts from here: the wait for the person's answer is not the call's
                item = self._tools.get((agent, event.call_id))
                if self.state == WAITING:  # answered: the call (or the asking one) runs
                    fetching = agent is None and event.tool == "fetch_content"
                    self.state = "Fetching" if fetching else "Running"
                if item is None:
                    return []
                item.started = self.clock()
                item.waiting = False
                item.touch()
                return [item]
            case ToolProgress():
                if agent is None and (agent, event.call_id) in self._tools:
                    self.state = f"Running {event.text}"  # the status line: `Running 3/5`
                return []
            case ToolCallFinished():
                item = self._tools.get((agent, event.call_id))
                if item is None:
                    return []
                item.status = event.status
                item.output = event.output
                item.diff = event.diff
                item.elapsed = event.elapsed
                item.waiting = False
                item.touch()
                if agent is None:
                    self.state = "Thinking"
                elif self.state == WAITING:  # an asked agent's call, rejected: the ask goes on
                    self.state = "Running"
                return [item]
            case PermissionRequested():
                item = self._tools.get((agent, event.call_id))
                self.state = WAITING
                if item is None:
                    return []
                item.waiting = True
                item.touch()
                return [item]
            case AgentStarted():
                if event.asked_by is None:
                    return []
                self._agent_titles[event.name] = event.title
                return [
                    self.add(
                        AgentHeaderItem(
                            agent=event.name,
                            title=event.title,
                            model=event.model,
                            provider=event.provider,
                            asked_by=event.asked_by,
                        )
                    )
                ]
            case AgentFinished():
                return self._close_streams(event.name)
            case ContextUsage() | TodoUpdated():
                return []  # the header shows it; the task list, the panel under it
            case HistoryCompacted():
                changed = self._close_streams(agent)
                changed.append(self.add(compaction_item(event, agent)))
                return changed
            case HistoryShortened():
                return [self.add(NoticeItem(agent=agent, text=event.message, level="info"))]
            case ModelChanged() | ModeChanged() | FilesRestored() | ModelProbed():
                return [self.add(NoticeItem(agent=agent, text=event.text, level="info"))]
            case RuleAdded():
                level = "warning" if event.warning else "info"
                return [self.add(NoticeItem(agent=agent, text=event.text, level=level))]
            case EngineError():
                changed = self._close_streams(agent)
                level = event.level
                changed.append(self.add(NoticeItem(agent=agent, text=event.message, level=level)))
                return changed
            case TurnEnded():
                if agent is not None:
                    return self._close_streams(agent)
                changed = self._close_streams(None)
                for key, item in list(self._tools.items()):
                    if item.running:  # nothing may spin for ever after its turn
                        item.status = "cancelled"
                        item.touch()
                        changed.append(item)
                    del self._tools[key]
                self.state = None
                changed.append(
                    self.add(RecapItem(text=event.recap(), stop_reason=event.stop_reason))
                )
                return changed
            case _:
                assert_never(event)

    def fold_all(self, folded: bool) -> list[Item]:
        """Ctrl+O: open or close every tool output."""
        changed = []
        for item in self.items:
            if isinstance(item, ToolItem) and item.folded != folded:
                item.folded = folded
                item.touch()
                changed.append(item)
        return changed

    def toggle(self, item: Item) -> bool:
        if isinstance(item, ToolItem | ThoughtItem):
            item.folded = not item.folded
            item.touch()
            return True
        return False


def transcript_from_records(
    transcript: Transcript, records: Iterable[dict[str, Any]]
) -> list[Item]:
    """Redraw a session from its journal's records (`Session.records`, read by
    `core.conversation`); returns the items added.

    Each entry becomes what the live session showed for it: questions and answers; one tool
    line per call, with the status, time, title, output and diff its result record kept (never
    guessed from the result's text); a call with no result at all (mm was killed before it
    finished) as cancelled; each turn's recap line, made by `TurnEnded.recap` as it was live;
    errors and warnings as notices; a compaction as its foldable line; a run of shortened tool
    outputs as one notice. Messages a compaction replaced stay: they were on screen before it.
    """
    from mm_tui.core.conversation import (
        AgentSaid,
        Compacted,
        ErrorSaid,
        ModelSwitched,
        Shortened,
        TurnDone,
        Undone,
        UserSaid,
        read_conversation,
    )
    from mm_tui.core.events import HistoryCompacted

    added: list[Item] = []
    turns = 0
    run = [0, 0]  # consecutive shortened outputs: how many, characters cut

    def add(item: Item) -> None:
        added.append(transcript.add(item))

    for entry in read_conversation(records):
        if not isinstance(entry, Shortened) and run[0]:
            add(NoticeItem(text=_shortened_notice(*run), level="info"))
            run = [0, 0]
        match entry:
            case UserSaid():
                add(UserItem(text=entry.text))
            case AgentSaid():
                if entry.thought.strip():  # folded, as once answered
                    add(ThoughtItem(pieces=[entry.thought], done=True, folded=True))
                if entry.text:
                    add(AnswerItem(pieces=[entry.text], done=True))
                for call in entry.calls:
                    add(_call_item(call))
            case TurnDone():
                turns += 1
                event = entry.ended(turns)
                add(RecapItem(text=event.recap(), stop_reason=event.stop_reason))
            case ErrorSaid():
                level = "warning" if entry.level == "warning" else "error"
                add(NoticeItem(text=entry.message, level=level))
            case Compacted():
                event = HistoryCompacted(
                    summary=entry.summary,
                    replaced=entry.replaced,
                    auto=entry.auto,
                    tokens_before=entry.tokens_before,
                    tokens_after=entry.tokens_after,
                )
                add(compaction_item(event))
            case Shortened():
                run = [run[0] + 1, run[1] + entry.cut]
            case ModelSwitched() | Undone():
                add(NoticeItem(text=entry.text, level="info"))
            case _:
                assert_never(entry)
    if run[0]:
        add(NoticeItem(text=_shortened_notice(*run), level="info"))
    return added


def _call_item(call: Call) -> ToolItem:
    """A call's line as its result record says it ended."""
    result = call.result
    item = ToolItem(
        call_id=call.call_id,
        tool=call.name,
        title=result.title or f"{call.name}  {one_line(call.arguments, 100)}",
        status=result.status,
        output=result.shown,
        diff=result.diff,
        elapsed=result.elapsed,
        from_text=result.from_text,
    )
    return item


def _shortened_notice(outputs: int, chars: int) -> str:
    many = outputs != 1
    return (
        f"shortened {outputs} tool output{'s' if many else ''} by {chars:,} characters to fit "
        f"the model's context; the session journal keeps {'them' if many else 'it'} whole"
    )
