"""MMApp: window mode. The engine runs in an exclusive Textual worker; each engine event is posted
to the UI as a Textual message and applied to the transcript store in one place
(`Transcript.apply`); the engine never touches a widget and the UI never waits on the engine.

Start-up keeps the first frame fast: the configuration, the model detection and the engine (with
pydantic and httpx behind them) load in a worker after the first frame, through `boot`.

A session that already holds something (`--resume`, `/sessions`) is redrawn from its journal's
records (`transcript_from_records`), so the window shows the conversation as it went, each call
with the status and time it really had; `/sessions` reads the journal in a thread, off the UI
loop, since a long session's journal is megabytes of JSON."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from textual import events, on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.message import Message
from textual.widget import Widget

from mm_tui.core.events import (
    ContextUsage,
    PermissionRequested,
    ServerState,
    TextDelta,
    ThoughtDelta,
    TurnEnded,
)
from mm_tui.core.text import one_line
from mm_tui.terminal_keys import named_key
from mm_tui.transcript.store import NoticeItem, Transcript
from mm_tui.transcript.view import TranscriptView
from mm_tui.widgets.agent_header import AgentHeader
from mm_tui.widgets.permission import PermissionBox
from mm_tui.widgets.prompt import COMMANDS, Prompt
from mm_tui.widgets.status_line import StatusLine

W = TypeVar("W", bound=Widget)

if TYPE_CHECKING:
    from textual.screen import Screen

    from mm_tui.config import ProjectConfig
    from mm_tui.core.events import Event
    from mm_tui.engine.session import Session
    from mm_tui.engine.turn import Engine
    from mm_tui.startup import Started

DELTA_FRAME = 1 / 60  # how long a run of deltas waits before the view is mounted (then: its frames)
WELCOME = "Type a request and press Enter. /help lists the keys and commands."
DEMO_HINT = "Try: list the files · read the README · fix the typo in greet.py · run the tests"


class EngineEvent(Message):
    """One engine event, carried to the UI."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class BootFailed(Exception):
    """Start-up cannot go on; the message is printed after the window closes."""


COMMAND_HELP = {
    "/new": "start a new session",
    "/compact": "summarise the conversation to free the model's context",
    "/abort": "cancel the turn",
    "/ask": "hand a request to another agent (/ask AGENT …)",
    "/sessions": "reopen a session",
    "/theme": "list the themes (/theme NAME switches)",
    "/help": "keys and commands",
    "/quit": "leave mm",
}


class SlashCommands(Provider):
    """The slash commands in the command palette (Ctrl+P), listed as soon as it opens."""

    async def discover(self) -> Hits:
        app = self.app
        assert isinstance(app, MMApp)
        for command in COMMANDS:
            yield DiscoveryHit(
                command,
                lambda c=command: app.run_command(c),
                help=COMMAND_HELP.get(command),
            )

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        app = self.app
        assert isinstance(app, MMApp)
        for command in COMMANDS:
            score = matcher.match(command)
            if score > 0:
                yield Hit(score, matcher.highlight(command), lambda c=command: app.run_command(c))


class MMApp(App[int]):
    CSS = """
    Screen { background: $background; }
    """
    COMMANDS = App.COMMANDS | {SlashCommands}
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", show=True),
        Binding("ctrl+c", "interrupt", "Cancel/Quit", show=False, priority=True),
        Binding("ctrl+o", "fold_all", "Outputs", show=True),
    ]

    def __init__(
        self,
        boot: Callable[[], Awaitable[Started]],
        *,
        clock: Callable[[], float] = time.monotonic,
        theme: str | None = None,
    ) -> None:
        super().__init__()
        from mm_tui.theme_files import load_themes

        loaded = load_themes()
        for each in loaded.themes:
            self.register_theme(each)
        self._theme_warnings = loaded.warnings  # theme files left out, said once attached
        self._first_theme(theme if theme in self.available_themes else "mm-dark")
        self.boot = boot
        self.clock = clock
        self._signals = contextlib.ExitStack()  # the stop-signal handlers, from on_ready on
        self._deltas: list[TextDelta | ThoughtDelta] = []  # a run of deltas not yet posted
        self._deltas_timer: asyncio.TimerHandle | None = None
        self.transcript = Transcript(clock)
        self.engine: Engine | None = None
        # Set once the engine is attached (`attach`): configuration read, model server picked,
        # tools registered; a request sent from then on goes to the model at once. `ready_at` is
        # when (time.perf_counter()): bench_window_startup reads both, tests await the event.
        self.engine_ready = asyncio.Event()
        self.ready_at: float | None = None
        self.exit_message: str | None = None
        # Requests sent while a turn runs or before the engine is ready: they run in order, one
        # turn each, when the turn before ends (as Claude Code and OpenCode do); Esc takes back
        # the last one. A request used to cancel the running turn, losing its work.
        self._queued: list[str] = []
        self._interrupts = 0.0  # time of the last Ctrl+C while idle
        self._widgets: dict[type, Any] = {}

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:
            event = named_key(event)  # xterm's form of Shift+Enter, before any binding
        await super().on_event(event)

    # -- start-up -------------------------------------------------------------------------

    def _first_theme(self, name: str) -> None:
        """Start in `name` without Textual's theme watcher: it re-parses every stylesheet one
        message after start, before the first frame (docs/performance.md). Nothing is parsed
        yet, so giving the stylesheet the theme's variables now does the same for nothing; the
        rest is what the watcher does (the theme classes, the ANSI colour filter)."""
        self.set_reactive(App.theme, name)
        dark = self.current_theme.dark
        classes = {c: False for c in self.classes if c.startswith("-theme-")}
        classes.update({f"-theme-{name}": True, "-dark-mode": dark, "-light-mode": not dark})
        self.update_classes(classes, update=False)
        self._refresh_truecolor_filter(self.ansi_theme)
        self.stylesheet.set_variables(self.get_css_variables())

    def get_default_screen(self) -> Any:
        from mm_tui.screens.main import MainScreen

        return MainScreen(self.transcript, self.clock)

    def on_ready(self) -> None:
        """After the first frame: only now load what start-up needs. From now on SIGTERM and
        SIGHUP (a closed terminal) quit as /quit does: the turn cancelled, its commands stopped,
        the session saved (`core/stop_signals.py`)."""
        from mm_tui.core.stop_signals import on_stop_signal, resume_only_after_suspend

        self._signals.enter_context(on_stop_signal(self._stop_on_signal))
        resume_only_after_suspend()  # a closing terminal's SIGCONT must not restart the driver
        self.status.show(None, "starting…")
        self._boot()

    def _stop_on_signal(self, signum: int) -> None:
        """Quit as /quit does, and end the process within STOP_GRACE seconds whatever happens
        (a closed terminal can leave the window's shutdown waiting: `core/stop_signals.py`)."""
        from mm_tui.core.stop_signals import STOP_GRACE, exit_by

        exit_by(STOP_GRACE, 128 + signum)
        self.exit(128 + signum)

    @work(exclusive=True, group="boot", exit_on_error=False)
    async def _boot(self) -> None:
        try:
            started = await self.boot()
        except Exception as exc:  # noqa: BLE001 - shown after the window closes
            self.exit_message = str(exc)
            self.exit(2)
            return
        self.attach(started)

    async def ask_trust(self, project: ProjectConfig) -> str:
        """Ask the person about a project config's keys that need trust (`TrustScreen`); runs in
        the boot's worker, before the engine starts."""
        from mm_tui.core.trust import visible
        from mm_tui.screens.trust import TrustScreen

        screen = TrustScreen(visible(str(project.path)), project.shown())
        answer = await self.push_screen(screen, wait_for_dismiss=True)
        return answer or "ignore"

    def attach(self, started: Started) -> None:
        """The engine is ready: show who is at work, redraw a resumed session, and say what
        start-up noticed."""
        engine = started.engine
        self.engine = engine
        settings = engine.settings
        if settings.theme in self.available_themes and settings.theme != self.theme:
            self.theme = settings.theme
        theme_warnings = list(self._theme_warnings)
        if settings.theme not in self.available_themes:  # from --theme or the theme key
            names = ", ".join(sorted(self.available_themes))
            theme_warnings.append(f"no theme named {settings.theme} — themes: {names}")
        header = self._widget(AgentHeader)
        header.show(
            title=settings.acp.title,
            model=engine.client.model,
            provider=engine.client.provider,
            cwd=str(engine.cwd),
            yolo=engine.permissions.yolo,
        )
        header.show_server(engine.server_answering is not False)
        self._show_context()
        session = engine.session
        warnings = list(session.warnings) + started.warnings + theme_warnings
        if len(session.records) > 1:  # more than the header: a resumed session
            self._redraw(session)
        notes = list(started.notes)
        if started.on_demo:
            notes.append(DEMO_HINT)
        for note in notes:
            self._notice(note, "warning" if note in warnings else "info")
        for warning in warnings:
            if warning not in notes:
                self._notice(warning, "warning")
        self._notice(WELCOME, "info")
        # an MCP server that fails says so when it does
        engine.registry.listen(engine.redacting(self.emit))
        self.status.show(None, "")
        self.ready_at = time.perf_counter()
        self.engine_ready.set()
        self._run_queued()

    # -- helpers --------------------------------------------------------------------------

    @property
    def view(self) -> TranscriptView:
        return self._widget(TranscriptView)

    @property
    def status(self) -> StatusLine:
        return self._widget(StatusLine)

    @property
    def prompt(self) -> Prompt:
        return self._widget(Prompt)

    @property
    def box(self) -> PermissionBox:
        return self._widget(PermissionBox)

    def _widget(self, kind: type[W]) -> W:
        """A widget of the main screen, found once: events ask for them thousands of times."""
        widget = self._widgets.get(kind)
        if widget is None:  # the main screen keeps its widgets for the whole run
            widget = self._widgets[kind] = self.screen_stack[0].query_one(kind)
        return widget  # type: ignore[return-value]

    def _notice(self, text: str, level: str = "info") -> None:
        item = self.transcript.add(NoticeItem(text=text, level=level))
        self.view.update_items([item])

    def _redraw(self, session: Session) -> None:
        """Show `session` from its records alone: nothing of the one before stays in view, and
        the view follows the bottom (its last lines are where the conversation goes on)."""
        from mm_tui.transcript.store import transcript_from_records

        self.transcript.clear()
        transcript_from_records(self.transcript, session.records)
        self.view.reset()

    def _show_context(self) -> None:
        """The header's context text, from the engine: after start-up and a change of session."""
        usage = self.engine.context_usage() if self.engine is not None else None
        self._widget(AgentHeader).show_context(usage.text if usage is not None else "")

    # -- turns ----------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        """The engine's `emit`: every event becomes a message; nothing waits. A run of answer
        (or thought) deltas of one agent that arrive within a frame crosses as one message, its
        texts joined: a fast server sends hundreds a second, and each message costs the window
        about what a small render does. Any other event posts the run first, so the
        order is kept and nothing is lost. A run waits until the view may draw again (its frame
        interval adapts to what a frame costs): at once when a frame is due, as it is when the
        engine's paced reads (`paced_reads.py`) come no oftener than frames, so the run is
        drawn in the same wake-up of the event loop that read it."""
        if isinstance(event, TextDelta | ThoughtDelta):
            run = self._deltas
            if run and (type(run[0]) is not type(event) or run[0].agent != event.agent):
                self._post_deltas()
            self._deltas.append(event)
            if self._deltas_timer is None:  # an event loop handle: a Textual timer is a task
                view = self._widgets.get(TranscriptView)
                delay = DELTA_FRAME if view is None else view.next_frame_in()
                loop = asyncio.get_running_loop()
                self._deltas_timer = loop.call_later(delay, self._post_deltas)
            return
        self._post_deltas()
        self.post_message(EngineEvent(event))

    def _post_deltas(self) -> None:
        if self._deltas_timer is not None:
            self._deltas_timer.cancel()
            self._deltas_timer = None
        run, self._deltas = self._deltas, []
        if run:
            joined = run[0] if len(run) == 1 else replace(run[0], text="".join(d.text for d in run))
            self.post_message(EngineEvent(joined))

    @property
    def deltas_pending(self) -> bool:
        """Whether deltas wait to cross to the window (at most a frame): tests wait for none."""
        return bool(self._deltas)

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
        self._notice(f"queued ({why}): {one_line(text, 60)} — Esc takes it back", "info")
        self.view.action_scroll_end()

    def _run_queued(self) -> None:
        """mm is free: the oldest queued request runs."""
        if not self._queued or self.engine is None or self.engine.busy:
            return
        text = self._queued.pop(0)
        if text.startswith("/ask "):
            self.run_command(text)
        else:
            self.run_turn(text)

    @on(EngineEvent)
    def on_engine_event(self, message: EngineEvent) -> None:
        event = message.event
        if not self.is_running:  # closing: its screens are gone, a cancelled turn still ends
            return
        if isinstance(event, ContextUsage):
            if event.agent is None:  # an asked agent's context is its own business
                self._widget(AgentHeader).show_context(event.text)
            return
        if isinstance(event, ServerState):
            if event.agent is None:
                self._widget(AgentHeader).show_server(event.answering)
            return
        changed = self.transcript.apply(event)
        if changed:
            self.view.update_items(changed)
        self.status.show(self.transcript.state)
        if isinstance(event, PermissionRequested):
            self.box.ask(event)
        if isinstance(event, TurnEnded) and event.agent is None:
            if self.box.request is not None:
                self.box.close()
            if self._queued:
                self._run_queued()
            elif not self.prompt.has_focus and not isinstance(self.focused, TranscriptView):
                self.prompt.focus()

    @on(PermissionBox.Answered)
    def on_permission_answered(self, message: PermissionBox.Answered) -> None:
        """The answer goes to the engine as a command; the call's line and the status line
        follow what the engine says next (`ToolCallRunning`, or the rejected call's end)."""
        request = message.request
        if self.engine is not None:  # a question comes from a running engine
            self.engine.answer(request.agent, request.call_id, message.decision)
        self.prompt.focus()

    @on(TranscriptView.Typed)
    def on_transcript_typed(self, message: TranscriptView.Typed) -> None:
        self.prompt.focus()
        self.prompt.insert(message.character)

    @on(PermissionBox.Typed)
    def on_permission_typed(self, message: PermissionBox.Typed) -> None:
        """Typed while the box is up: kept in the prompt; the box keeps the focus."""
        self.prompt.insert(message.character)

    @on(Prompt.Submitted)
    def on_prompt_submitted(self, message: Prompt.Submitted) -> None:
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
        if command == "/quit":
            self.exit(0)
        elif command == "/abort":
            self.action_cancel()
        elif command == "/help":
            self.action_help()
        elif command == "/new":
            self.new_session()
        elif command == "/theme":
            self.switch_theme(rest)
        elif command == "/sessions":
            self.open_sessions()
        elif command == "/compact":
            self.compact()
        elif command == "/ask":
            self.ask(rest)
        else:
            self._notice(f"unknown command {command} — /help lists them", "warning")

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
            self._notice(ask_usage(self.engine.registry.get("ask_agent")), "warning")
            return
        if self.engine.busy:
            self._queue(f"/ask {rest}")
            return
        self.run_ask(*asked)

    @work(exclusive=True, group="turn", exit_on_error=False)
    async def run_ask(self, agent: str, prompt: str) -> None:
        assert self.engine is not None
        await self.engine.run_ask(agent, prompt, self.emit)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Textual's palette commands, but Maximize and Minimize: maximizing the transcript or
        the prompt filled the screen with Textual's hatching and hid the rest of mm."""
        for command in super().get_system_commands(screen):
            if command.title not in ("Maximize", "Minimize"):
                yield command

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """The palette's Screenshot: into the Downloads folder where there is one (Textual's
        choice), else into mm's state folder (`screenshots/`), never the project; Textual's
        notice says where. Without this, a machine with no ~/Downloads (a server, a container)
        got a failure."""
        if path is None:
            try:
                from platformdirs import user_downloads_path  # Textual's own dependency

                downloads = user_downloads_path()
            except ImportError:
                downloads = None
            if downloads is None or not downloads.is_dir():
                from mm_tui.core.paths import user_state_dir

                folder = user_state_dir() / "screenshots"
                folder.mkdir(parents=True, exist_ok=True)
                path = str(folder)
        super().action_screenshot(filename, path)

    def action_help(self) -> None:
        from mm_tui.screens.help import HelpScreen

        standing = self.engine.permissions.standing() if self.engine else {}
        instructions = self.engine.instructions.listing() if self.engine else []
        self.push_screen(HelpScreen(standing, instructions))

    def switch_theme(self, name: str) -> None:
        names = sorted(self.available_themes)
        if not name:
            self._notice("themes: " + ", ".join(names), "info")
            return
        if name not in self.available_themes:
            self._notice(f"no theme named {name} — themes: {', '.join(names)}", "warning")
            return
        self.theme = name

    def new_session(self) -> None:
        if self.engine is None:
            return
        from mm_tui.startup import new_session_like

        self.engine.cancel()
        self.engine.new_session(new_session_like(self.engine))
        self.transcript.clear()
        self.view.reset()
        self._notice(f"new session {self.engine.session.id}", "info")
        self._show_context()

    def open_sessions(self) -> None:
        if self.engine is None:
            return
        from mm_tui.config import sessions_folders
        from mm_tui.screens.sessions import SessionsScreen

        folders = sessions_folders(self.engine.settings, self.engine.cwd)

        def chosen(session_id: str | None) -> None:
            if session_id:
                self.resume(session_id)

        self.push_screen(SessionsScreen(folders), chosen)

    @work(exclusive=True, group="resume", exit_on_error=False)
    async def resume(self, session_id: str) -> None:
        """Reopen a session: its journal is read in a thread, then the window redraws it."""
        import asyncio

        from mm_tui.config import sessions_folders
        from mm_tui.engine.session import SessionError
        from mm_tui.engine.session_listing import find_session

        assert self.engine is not None
        folders = sessions_folders(self.engine.settings, self.engine.cwd)
        self.status.show(None, "opening the session…")
        try:
            session = await asyncio.to_thread(find_session, folders, session_id)
        except SessionError as exc:
            self._notice(str(exc), "error")
            return
        finally:
            self.status.show(None, "")
        self.engine.cancel()
        self.engine.new_session(session)
        self._redraw(session)
        self._notice(f"resumed session {session.id}", "info")
        for warning in session.warnings:
            self._notice(warning, "warning")
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
            self._notice(f"/compact failed: {exc}", "error")
        self.status.show(None)

    # -- keys -----------------------------------------------------------------------------

    def action_cancel(self) -> None:
        """Esc: close the keys panel; else take back the last queued request; else cancel the
        turn; else reject the call waiting for a decision."""
        from textual.widgets import HelpPanel

        if self.screen.query(HelpPanel):
            self.action_hide_help_panel()
        elif self._queued:
            text = self._queued.pop()
            self._notice(f"taken back: {one_line(text, 60)}", "info")
        elif self.engine is not None and self.engine.busy:
            self.engine.cancel()
        elif self.box.request is not None:
            self.box.answer("r")

    def action_interrupt(self) -> None:
        """Ctrl+C: copy the text selected with the mouse when there is some (as in a terminal,
        and as Textual's screen binds it); else cancel the turn and forget what was queued
        behind it; else clear the prompt's text; quit when pressed twice with nothing else to
        do."""
        selected = self.screen.get_selected_text()
        if selected:
            self.copy_to_clipboard(selected)
            self.screen.clear_selection()
            self._toasts_above_prompt()
            self.notify(f"Copied {len(selected):,} characters", timeout=2)
            return
        if self.engine is not None and self.engine.busy:
            if self._queued:
                self._notice(f"taken back: {len(self._queued)} queued request(s)", "info")
                self._queued.clear()
            self.engine.cancel()
            return
        if self.prompt.text:  # text being typed: cleared first, as in a shell and in peers
            self.prompt.clear()
            self._interrupts = 0.0
            return
        now = time.monotonic()
        if now - self._interrupts < 2.0:
            self.exit(0)
            return
        self._interrupts = now
        self._toasts_above_prompt()
        self.notify("Press Ctrl+C again to quit", timeout=2)

    def _toasts_above_prompt(self) -> None:
        """Textual stacks toasts from the bottom of the screen, a row up for a footer: in mm the
        prompt is there, just above the key bar, and the toast hid it and its border. Lift them
        above the status line, however tall the prompt has grown."""
        screen = self.screen
        if screen is not self.screen_stack[0]:  # another screen has no prompt to keep clear
            return
        rack = screen.query("ToastRack")  # Textual's own, on every screen (by name: private)
        if rack:
            clear = max(0, screen.size.height - self.status.region.y)
            rack.first().styles.margin = (0, 0, clear, 0)

    def action_fold_all(self) -> None:
        self.view.fold_all()

    async def on_unmount(self) -> None:
        self._signals.close()
        if self.engine is not None:
            self.engine.cancel()
            await self.engine.aclose()
