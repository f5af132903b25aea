"""MainScreen: the conversation, and its controller. It composes the header, the transcript, the
permission box when one is pending, the status line, the prompt and the key bar; it applies
each engine event to the transcript store in one place (`Transcript.apply`) and hands the
changed items to the view; it runs the turns (in workers, one at a time, later requests queued),
the slash commands and the turn keys (Esc, Ctrl+C, Ctrl+O, bound on the app so that they reach
it from any screen). The app (`window/app.py`) boots, owns the engine, the themes, the palette
and the other screens.

A session that already holds something (`--resume`, `/sessions`) is redrawn from its journal's
records (`transcript_from_records`), so the window shows the conversation as it went, each call
with the status and time it really had; `/sessions` reads the journal in a thread, off the UI
loop, since a long session's journal is megabytes of JSON."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast, runtime_checkable

from textual import events, on, work
from textual.app import ComposeResult
from textual.message import Message
from textual.screen import UPDATE_PERIOD, Screen
from textual.widget import Widget

from mm_tui.core.text import one_line
from mm_tui.window.delta_joiner import DeltaJoiner
from mm_tui.window.frame_clock import FrameClock
from mm_tui.window.screens.cropped_compositor import CroppedCompositor
from mm_tui.window.transcript.store import NoticeItem, Transcript
from mm_tui.window.transcript.view import TranscriptView
from mm_tui.window.widgets.agent_header import AgentHeader
from mm_tui.window.widgets.key_bar import KeyBar
from mm_tui.window.widgets.prompt_stand_in import ArgumentsWanted, PromptStandIn, Submitted
from mm_tui.window.widgets.status_line import StatusLine

if TYPE_CHECKING:
    from mm_tui.core.events import Event, Mode, TextDelta, ThoughtDelta, TodoStep
    from mm_tui.engine.session import Session
    from mm_tui.engine.turn import Engine
    from mm_tui.startup import Started
    from mm_tui.window.widgets.permission import PermissionBox
    from mm_tui.window.widgets.prompt import Prompt

W = TypeVar("W", bound=Widget)

WELCOME = "Type a request and press Enter. /help lists the keys and commands."
DEMO_HINT = "Try: list the files · read the README · fix the typo in greet.py · run the tests"
CARRY_OUT = "Carry out the plan."  # what leaving plan mode puts in an empty prompt


class EngineEvent(Message):
    """One engine event, carried to the UI."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


@runtime_checkable
class WindowCommands(Protocol):
    """What the slash commands ask of the app above this screen (`MMApp`, which a screen
    may not import: the window's layers run the other way)."""

    def action_help(self) -> None: ...

    def switch_theme(self, name: str) -> None: ...


class MainScreen(Screen[None]):
    AUTO_FOCUS = "#prompt"  # not the transcript: each restyle of it costs a frame's worth
    DEFAULT_CSS = """
    MainScreen { layout: vertical; overflow: hidden; }
    """

    def __init__(self, clock: Callable[[], float]) -> None:
        super().__init__()
        self._compositor = CroppedCompositor()  # a partial update asks only what it touches
        self.clock = clock
        self.transcript = Transcript(clock)
        self.frames = FrameClock()  # the view draws by it, the status line and deltas ride it
        self._deltas = DeltaJoiner(
            lambda joined: self.post_message(EngineEvent(joined)), self.frames
        )
        self.engine: Engine | None = None  # set by `attach`, once start-up made it
        # Requests sent while a turn runs or before the engine is ready: they run in order, one
        # turn each, when the turn before ends (as Claude Code and OpenCode do); Esc takes back
        # the last one. A request used to cancel the running turn, losing its work.
        self._queued: list[str] = []
        self._interrupts = 0.0  # time of the last Ctrl+C while idle
        self._planned = False  # a turn ended in plan mode since it was entered
        self._widgets: dict[type, Any] = {}
        self._box: PermissionBox | None = None  # mounted at the first question (`box`)
        self._updated = 0.0  # when `_on_idle` last updated the screen itself
        self._resumed = False  # whether the screen was shown once (`on_screen_resume`)
        self._delta_kinds: tuple[type[TextDelta], type[ThoughtDelta]] | None = None  # `emit`

    async def _on_idle(self, event: events.Idle) -> None:
        """Paint what changed now, in this wake-up of the event loop, rather than at the next
        tick of Textual's 60-per-second update timer.

        Why: each wake-up of the event loop costs kernel and loop time, and through the timer
        every frame cost one more: the timer's sleep until its next tick, after the tick that
        painted (what that came to: docs/performance.md). The timer is still how Textual caps
        the rate: an update within UPDATE_PERIOD of the last one made here goes to it, as in
        Textual. This overrides Textual's own `Screen._on_idle`, whose work it calls
        (`_on_timer_update`); Textual is pinned to < 8.3."""
        dirty = (
            self._layout_required
            or self._scroll_required
            or self._repaint_required
            or self._recompose_required
            or self._dirty_widgets
        )
        now = time.monotonic()
        if (
            dirty
            and now - self._updated >= UPDATE_PERIOD
            and not self.app._batch_count  # pyright: ignore[reportPrivateUsage]
            and self.is_current
        ):
            event.prevent_default()
            self._updated = now
            self._on_timer_update()
            return
        await super()._on_idle(event)

    def compose(self) -> ComposeResult:
        yield AgentHeader(id="header")
        yield TranscriptView(self.transcript, clock=self.clock, frames=self.frames, id="transcript")
        yield StatusLine(self.clock, id="status")
        yield PromptStandIn(id="prompt")  # the prompt comes right after the first frame
        yield KeyBar(id="keys")

    async def take_prompt(self) -> None:
        """The prompt in place of its stand-in once the engine is ready: the same place, the
        same picture (no frame shows the change), the text typed and the requests sent in it,
        the focus where the stand-in had it (`prompt_stand_in.py` says why; the app holds the
        keys meanwhile)."""
        stand_in = self.query_one(PromptStandIn)
        stand_in.closed = True  # from now on the app holds every key for the prompt
        from mm_tui.window.widgets.prompt import Prompt

        prompt = Prompt(id="prompt", text=stand_in.text, past=stand_in.past)
        focused = self.focused is stand_in
        with self.app.batch_update():
            if focused:
                self.set_focus(None, scroll_visible=False)
            await stand_in.remove()
            await self.mount(prompt, after=self.status)
            prompt.move_cursor(prompt.document.end)
            prompt.update_suggestion()
            if focused:
                self.set_focus(prompt, scroll_visible=False)

    def type_early(self, event: events.Key) -> bool | None:
        """A key typed before the prompt is there: True if its stand-in took it; None if it is
        a key of the window's own (Ctrl+Q, Ctrl+C, Esc...: they work while mm starts); False if
        it waits for the prompt (it may edit the text: an arrow, Shift+Enter, Tab)."""
        found = self.query(PromptStandIn)
        stand_in = found.first() if found else None
        if stand_in is not None and stand_in.take(event):
            return True
        bindings = self.active_bindings
        for key in event.aliases:
            bound = bindings.get(key)
            if bound is not None:
                return None if bound.node is not stand_in else False
        return False

    def on_mount(self) -> None:
        # the status line's spinner moves in the transcript's frames while there are any
        self.frames.ride(self.status.ride)

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        """The first time the screen is shown, its widgets are not styled again: each was
        styled as it mounted, a moment before, and the prompt again as it took the focus.
        Textual's own handler, which runs next, restyles every widget at each resume (for a
        screen coming back after a change of theme or stylesheet, as this one does after the
        help or the sessions): 2 to 3 ms of the way to the first frame (docs/performance.md)."""
        if not self._resumed:
            self._resumed = True
            event.refresh_styles = False

    # -- its widgets ----------------------------------------------------------------------

    @property
    def header(self) -> AgentHeader:
        return self._widget(AgentHeader)

    @property
    def view(self) -> TranscriptView:
        return self._widget(TranscriptView)

    @property
    def status(self) -> StatusLine:
        return self._widget(StatusLine)

    @property
    def prompt(self) -> Prompt:
        """The prompt, from right after the first frame on (`take_prompt`)."""
        from mm_tui.window.widgets.prompt import Prompt

        return self._widget(Prompt)

    @property
    def box(self) -> PermissionBox:
        """The permission box, mounted the first time it is wanted, above the status line:
        mounted hidden in the first frame, it cost that frame 0.5% (docs/performance.md), for a
        box most sessions never open. Its module is loaded then too, not with the screen."""
        box = self._box
        if box is None:
            from mm_tui.window.widgets.permission import PermissionBox

            box = self._box = PermissionBox(id="permission")
            self.mount(box, before=self.status)
        return box

    def _asking(self) -> bool:
        """Whether the permission box holds a question (without mounting it to ask)."""
        box = self._box
        return box is not None and box.request is not None

    def _widget(self, kind: type[W]) -> W:
        """A widget of this screen, found once: events ask for them thousands of times."""
        widget = self._widgets.get(kind)
        if widget is None:  # the screen keeps its widgets for the whole run
            widget = self._widgets[kind] = self.query_one(kind)
        return widget  # type: ignore[return-value]

    # -- the engine -----------------------------------------------------------------------

    def attach(self, started: Started, warnings: list[str]) -> None:
        """The engine is ready: show who is at work, redraw a resumed session, say what start-up
        noticed (`warnings`: what to show as warnings, start-up's and the app's), and run what
        was queued meanwhile."""
        engine = self.engine = started.engine
        self.header.show(
            title=engine.settings.acp.title,
            model=engine.client.model,
            provider=engine.client.provider,
            cwd=str(engine.cwd),
            mode=engine.permissions.mode,
        )
        self.header.show_server(engine.server_answering is not False)
        self._show_context()
        session = engine.session
        warnings = list(session.warnings) + warnings
        if len(session.records) > 1:  # more than the header: a resumed session
            self._redraw(session)
        notes = list(started.notes)
        if started.on_demo:
            notes.append(DEMO_HINT)
        for note in notes:
            self.notice(note, "warning" if note in warnings else "info")
        for warning in warnings:
            if warning not in notes:
                self.notice(warning, "warning")
        self.notice(WELCOME, "info")
        # an MCP server that fails says so when it does
        engine.registry.listen(engine.redacting(self.emit))
        self.status.show(None, "")

    def notice(self, text: str, level: str = "info") -> None:
        """A line of mm's own in the transcript (a note, a warning, an error)."""
        item = self.transcript.add(NoticeItem(text=text, level=level))
        self.view.update_items([item])

    def _redraw(self, session: Session) -> None:
        """Show `session` from its records alone: nothing of the one before stays in view, and
        the view follows the bottom (its last lines are where the conversation goes on)."""
        from mm_tui.tools.todo import last_todo_list
        from mm_tui.window.transcript.store import transcript_from_records

        self.transcript.clear()
        transcript_from_records(self.transcript, session.records)
        self.view.reset()
        said = (r["message"] for r in session.records if r.get("type") == "message")
        self.show_todo(last_todo_list(said) or ())  # a compaction may have dropped the call

    def show_todo(self, steps: tuple[TodoStep, ...]) -> None:
        """The model's task list under the header: the panel is mounted the first time."""
        from mm_tui.window.widgets.todo_panel import TodoPanel

        found = self.query(TodoPanel)
        if found:
            found.first().show(steps)
        elif steps:
            panel = TodoPanel(id="todo")
            self.mount(panel, before=self.view)
            panel.show(steps)

    def _show_context(self) -> None:
        """The header's context text, from the engine: after start-up and a change of session."""
        usage = self.engine.context_usage() if self.engine is not None else None
        self.header.show_context(usage.text if usage is not None else "")

    def emit(self, event: Event) -> None:
        """The engine's `emit`: every event becomes a message; nothing waits. Streamed text
        crosses a run at a time (`DeltaJoiner`); any other event posts the run first. Called
        per token: the classes are imported once (an import statement costs as much as the
        rest of this), on the first event, when the engine has loaded them."""
        deltas = self._delta_kinds
        if deltas is None:
            from mm_tui.core.events import TextDelta, ThoughtDelta

            deltas = self._delta_kinds = (TextDelta, ThoughtDelta)
        if isinstance(event, deltas):
            self._deltas.add(event)
            return
        self._deltas.flush()
        self.post_message(EngineEvent(event))

    @property
    def deltas_pending(self) -> bool:
        """Whether deltas wait to cross to the window (at most a frame): tests wait for none."""
        return self._deltas.pending

    @on(EngineEvent)
    def on_engine_event(self, message: EngineEvent) -> None:
        # imported here, not with the module: the events load after the first frame (the
        # engine's own), and nothing before the first frame needs them (docs/performance.md)
        from mm_tui.core.events import ContextUsage, PermissionRequested, ServerState, TurnEnded

        event = message.event
        if not self.app.is_running:  # closing: widgets are going, a cancelled turn still ends
            return
        if isinstance(event, ContextUsage):
            if event.agent is None:  # an asked agent's context is its own business
                self.header.show_context(event.text)
            return
        if isinstance(event, ServerState):
            if event.agent is None:
                self.header.show_server(event.answering)
            return
        if event.agent is None:
            self._beside_the_transcript(event)
        changed = self.transcript.apply(event)
        if changed:
            self.view.update_items(changed)
        self.status.show(self.transcript.state)
        if isinstance(event, PermissionRequested):
            self.box.ask(event)
        if isinstance(event, TurnEnded) and event.agent is None:
            if self._asking():
                self.box.close()
            if self._queued:
                self.run_queued()
            elif self.query(PromptStandIn):
                pass  # the prompt is not there yet: its stand-in keeps the focus until it is
            elif not self.prompt.has_focus and not isinstance(self.focused, TranscriptView):
                self.prompt.focus()

    def _beside_the_transcript(self, event: Event) -> None:
        """What this agent's events change outside the transcript: the header, the task list,
        whether a plan was made."""
        from mm_tui.core.events import ModeChanged, ModelChanged, TodoUpdated, TurnEnded

        if isinstance(event, ModelChanged):
            self.header.show_model(event.model)
        elif isinstance(event, ModeChanged):
            self.header.show_mode(event.mode)
        elif isinstance(event, TodoUpdated):
            self.show_todo(event.steps)
        elif isinstance(event, TurnEnded) and self.engine is not None:
            if self.engine.permissions.mode == "plan":
                self._planned = True  # a turn that planned: leaving plan mode offers to go on

    # -- turns ----------------------------------------------------------------------------

    @work(exclusive=True, group="turn", exit_on_error=False)
    async def run_turn(self, text: str) -> None:
        assert self.engine is not None
        await self.engine.run_turn(text, self.emit)

    def submit(self, text: str) -> None:
        if self.engine is None or self.engine.busy:
            self._queue(text)
            return
        self.run_turn(text)

    def _queue(self, text: str) -> None:
        """Keep a request for when mm is free, and say so."""
        self._queued.append(text)
        why = "mm is starting" if self.engine is None else "a turn is running"
        self.notice(f"queued ({why}): {one_line(text, 60)} — Esc takes it back", "info")
        self.view.action_scroll_end()

    def run_queued(self) -> None:
        """mm is free: the oldest queued request runs."""
        if not self._queued or self.engine is None or self.engine.busy:
            return
        text = self._queued.pop(0)
        if text.startswith("/"):  # a command that waited for the turn (a request never does:
            self.run_command(text)  # one typed with a slash is a command)
        else:
            self.run_turn(text)

    def on_permission_box_answered(self, message: PermissionBox.Answered) -> None:
        """The answer goes to the engine as a command; the call's line and the status line
        follow what the engine says next (`ToolCallRunning`, or the rejected call's end)."""
        request = message.request
        if self.engine is not None:  # a question comes from a running engine
            self.engine.answer(request.agent, request.call_id, message.answer)
        self.prompt.focus()

    @on(TranscriptView.Typed)
    def on_transcript_typed(self, message: TranscriptView.Typed) -> None:
        self.prompt.focus()
        self.prompt.insert(message.character)

    def on_permission_box_typed(self, message: PermissionBox.Typed) -> None:
        """Typed while the box is up: kept in the prompt; the box keeps the focus."""
        self.prompt.insert(message.character)

    @on(ArgumentsWanted)
    @work(group="arguments", exit_on_error=False)
    async def on_prompt_arguments_wanted(self, message: ArgumentsWanted) -> None:
        """`/model ` typed: the server's model names, for the prompt to complete. A name that
        would need escaping to be shown cannot be typed either: it is left out."""
        from mm_tui.core.terminal_text import safe_display
        from mm_tui.engine.model_choice import offered_ids

        if self.engine is None:
            return
        try:
            names = await offered_ids(self.engine.client)
        except Exception:  # noqa: BLE001 - no completion, nothing else lost
            names = []
        self.prompt.arguments[message.command] = [n for n in names if safe_display(n) == n]
        self.prompt.update_suggestion()

    @on(Submitted)
    def on_prompt_submitted(self, message: Submitted) -> None:
        self.view.action_scroll_end()  # what the request starts shows at the bottom
        text = message.text
        if text.startswith("/"):
            self.run_command(text)
        else:
            self.submit(text)

    # -- commands -------------------------------------------------------------------------

    def run_command(self, line: str) -> None:
        command, _, rest = line.strip().partition(" ")
        rest = rest.strip()
        app = cast(WindowCommands, self.app)  # the themes and the help screen are the app's
        if command == "/quit":
            self.app.exit(0)
        elif command == "/abort":
            self.cancel_key()
        elif command == "/help":
            app.action_help()
        elif command == "/new":
            self.new_session()
        elif command == "/theme":
            app.switch_theme(rest)
        elif command == "/sessions":
            self.open_sessions()
        elif command == "/compact":
            self.compact()
        elif command == "/ask":
            self.ask(rest)
        elif command == "/model":
            self.model_command(rest)
        elif command == "/mode":
            self.mode_command(rest)
        elif command == "/undo":
            self.undo_command(rest)
        else:
            self.notice(f"unknown command {command} — /help lists them", "warning")

    def ask(self, rest: str) -> None:
        """`/ask AGENT …`: the request goes to an agent of mmConfigs as a turn of its own,
        shown as ask_agent shows an asked agent, recorded as a /ask exchange (`Engine.run_ask`
        says how). Sent while a turn runs, it waits for the turn's end, as a request does."""
        from mm_tui.tools.ask_agent import ask_usage, split_ask

        if self.engine is None:
            self._queue(f"/ask {rest}")
            return
        asked = split_ask(rest)
        if asked is None:
            self.notice(ask_usage(self.engine.registry.get("ask_agent")), "warning")
            return
        if self.engine.busy:
            self._queue(f"/ask {rest}")
            return
        self.run_ask(*asked)

    @work(exclusive=True, group="turn", exit_on_error=False)
    async def run_ask(self, agent: str, prompt: str) -> None:
        assert self.engine is not None
        await self.engine.run_ask(agent, prompt, self.emit)

    def model_command(self, name: str) -> None:
        """`/model`: the server's models to choose from; `/model NAME`: switch at once. The
        conversation stays (engine/model_choice.py). Sent while a turn runs, it waits for the
        turn's end, as a request does."""
        if self.engine is None or self.engine.busy:
            self._queue(f"/model {name}".rstrip())
            return
        if name:
            self.switch_model(name)
            return
        from mm_tui.engine.model_choice import offered_models
        from mm_tui.window.screens.models import ModelsScreen

        engine = self.engine

        def chosen(model: str | None) -> None:
            if model:
                self.model_command(model)

        screen = ModelsScreen(engine.client.model, lambda: offered_models(engine.client))
        self.app.push_screen(screen, chosen)

    def undo_command(self, rest: str) -> None:
        """`/undo [N]`: the files the last N turns changed, put back once the person said yes
        (engine/undoing.py). Sent while a turn runs, it waits for the turn's end."""
        if self.engine is None or self.engine.busy:
            self._queue(f"/undo {rest}".rstrip())
            return
        if rest and not rest.isdigit():
            self.notice("/undo N: N is a number of turns (/undo alone: the last one)", "warning")
            return
        self.plan_undo(int(rest) if rest else None)

    @work(exclusive=True, group="turn", exit_on_error=False)
    async def plan_undo(self, turns: int | None) -> None:
        """The plan, then the question; the files change only on yes."""
        from mm_tui.engine.undo.snapshots import UndoError
        from mm_tui.window.screens.undo import UndoScreen

        engine = self.engine
        assert engine is not None
        self.status.show("Looking at the files")
        try:
            pending = await engine.plan_undo(turns)
        except UndoError as exc:
            self.notice(f"/undo: {exc}", "warning")
            return
        finally:
            self.status.show(None)
        if not pending.plan.changes and not pending.plan.left:
            self.notice("/undo: nothing to change, the files are as they were", "info")
            return
        if await self.app.push_screen_wait(UndoScreen(pending.plan)):
            try:
                await engine.undo(pending, self.emit)
            except UndoError as exc:
                self.notice(f"/undo: {exc}", "warning")
        else:
            self.notice("/undo: the files are kept as they are", "info")
        self.run_queued()

    @work(exclusive=True, group="turn", exit_on_error=False)
    async def switch_model(self, name: str) -> None:
        """Switch to `name` once the server is known to offer it (`choose_model`)."""
        from mm_tui.engine.model_choice import choose_model

        assert self.engine is not None
        self.status.show("Switching model")
        try:
            for note in await choose_model(self.engine, name, self.emit):
                self.notice(note, "info")
        except Exception as exc:  # noqa: BLE001 - said in the transcript
            self.notice(f"/model failed: {exc}", "error")
        finally:
            self.status.show(None)
            self._show_context()
            self.run_queued()

    def cycle_mode(self) -> None:
        """Shift+Tab: ask, auto, plan, in turn (engine/permissions.py), from the next call and
        request on. Leaving plan mode after a plan offers to carry it out: the prompt holds the
        request, Enter sends it."""
        from mm_tui.engine.permissions import MODES

        if self.engine is not None:
            mode = self.engine.permissions.mode
            self._set_mode(MODES[(MODES.index(mode) + 1) % len(MODES)])

    def mode_command(self, name: str) -> None:
        """`/mode NAME` (the palette's way to a mode; Shift+Tab cycles)."""
        from mm_tui.engine.permissions import MODES

        if self.engine is None:
            return
        if name in MODES:
            self._set_mode(cast("Mode", name))
        else:
            self.notice(f"modes: {', '.join(MODES)} (now {self.engine.permissions.mode})", "info")

    def _set_mode(self, mode: Mode) -> None:
        assert self.engine is not None
        left = self.engine.permissions.mode
        self.engine.set_mode(mode, self.emit)
        if left == "plan" and mode != "plan" and self._planned and not self.prompt.text:
            self.prompt.insert(CARRY_OUT)
            self.notice("the plan is ready: Enter carries it out", "info")
            self._planned = False

    def new_session(self) -> None:
        if self.engine is None:
            return
        from mm_tui.startup import new_session_like

        self.engine.cancel()
        self.engine.new_session(new_session_like(self.engine))
        self.transcript.clear()
        self.view.reset()
        self.show_todo(())
        self.notice(f"new session {self.engine.session.id}", "info")
        self._show_context()

    def open_sessions(self) -> None:
        if self.engine is None:
            return
        from mm_tui.config import sessions_folders
        from mm_tui.window.screens.sessions import SessionsScreen

        folders = sessions_folders(self.engine.settings, self.engine.cwd)

        def chosen(session_id: str | None) -> None:
            if session_id:
                self.resume(session_id)

        self.app.push_screen(SessionsScreen(folders), chosen)

    @work(exclusive=True, group="resume", exit_on_error=False)
    async def resume(self, session_id: str) -> None:
        """Reopen a session: its journal is read in a thread, then the window redraws it."""
        from mm_tui.config import sessions_folders
        from mm_tui.engine.session import SessionError
        from mm_tui.engine.session_listing import find_session

        assert self.engine is not None
        folders = sessions_folders(self.engine.settings, self.engine.cwd)
        self.status.show(None, "opening the session…")
        try:
            session = await asyncio.to_thread(find_session, folders, session_id)
        except SessionError as exc:
            self.notice(str(exc), "error")
            return
        finally:
            self.status.show(None, "")
        self.engine.cancel()
        self.engine.new_session(session)
        self._redraw(session)
        self.notice(f"resumed session {session.id}", "info")
        for warning in session.warnings:
            self.notice(warning, "warning")
        self._show_context()

    @work(exclusive=True, group="turn", exit_on_error=False)
    async def compact(self) -> None:
        """`/compact`: the engine emits what it did (`HistoryCompacted`, shown as its line with
        the summary folded beneath); only a failure needs saying here."""
        if self.engine is None:
            return
        self.status.show("Compacting")
        try:
            await self.engine.compact(self.emit)
        except Exception as exc:  # noqa: BLE001 - said in the transcript
            self.notice(f"/compact failed: {exc}", "error")
        self.status.show(None)

    # -- the turn keys (bound on the app, so that they reach here from any screen) ----------

    def cancel_key(self) -> None:
        """Esc: close the keys panel; else take back the last queued request; else cancel the
        turn; else reject the call waiting for a decision."""
        from textual.widgets import HelpPanel

        if self.app.screen.query(HelpPanel):
            self.app.action_hide_help_panel()
        elif self._queued:
            text = self._queued.pop()
            self.notice(f"taken back: {one_line(text, 60)}", "info")
        elif self.engine is not None and self.engine.busy:
            self.engine.cancel()
        elif self._asking():
            self.box.answer("r")

    def interrupt_key(self) -> None:
        """Ctrl+C: copy the text selected with the mouse when there is some (as in a terminal,
        and as Textual's screen binds it); else cancel the turn and forget what was queued
        behind it; else clear the prompt's text; quit when pressed twice with nothing else to
        do."""
        app = self.app
        selected = app.screen.get_selected_text()
        if selected:
            app.copy_to_clipboard(selected)
            app.screen.clear_selection()
            self._toasts_above_prompt()
            app.notify(f"Copied {len(selected):,} characters", timeout=2)
            return
        if self.engine is not None and self.engine.busy:
            if self._queued:
                self.notice(f"taken back: {len(self._queued)} queued request(s)", "info")
                self._queued.clear()
            self.engine.cancel()
            return
        stand_in = self.query(PromptStandIn)  # until the engine is ready (`take_prompt`)
        typing = stand_in.first() if stand_in else self.prompt
        if typing.text:  # text being typed: cleared first, as in a shell and in peers
            typing.clear()
            self._interrupts = 0.0
            return
        now = time.monotonic()
        if now - self._interrupts < 2.0:
            app.exit(0)
            return
        self._interrupts = now
        self._toasts_above_prompt()
        app.notify("Press Ctrl+C again to quit", timeout=2)

    def _toasts_above_prompt(self) -> None:
        """Textual stacks toasts from the bottom of the screen, a row up for a footer: in mm the
        prompt is there, just above the key bar, and the toast hid it and its border. Lift them
        above the status line, however tall the prompt has grown."""
        if not self.is_current:  # another screen has no prompt to keep clear
            return
        rack = self.query("ToastRack")  # Textual's own, on every screen (by name: private)
        if rack:
            clear = max(0, self.size.height - self.status.region.y)
            rack.first().styles.margin = (0, 0, clear, 0)

    def fold_key(self) -> None:
        """Ctrl+O: fold or unfold every tool output."""
        self.view.fold_all()
