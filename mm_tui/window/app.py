"""MMApp: window mode's app. It boots (the configuration, the model detection and the engine
load in a worker after the first frame, through `boot`, so that the first frame is fast), owns
the engine, the themes, the command palette and the screens. The conversation and its controller
are the main screen's (`screens/main.py`): it applies each engine event to the transcript store,
runs the turns and the slash commands. The engine runs in an exclusive Textual worker; it never
touches a widget and the UI never waits on it."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from textual import events, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider

from mm_tui.window.full_passes import FullPasses
from mm_tui.window.screens.main import MainScreen
from mm_tui.window.terminal_keys import named_key
from mm_tui.window.widgets.prompt_stand_in import COMMANDS

if TYPE_CHECKING:
    from textual.driver import Driver
    from textual.screen import Screen

    from mm_tui.config import ProjectConfig
    from mm_tui.engine.turn import Engine
    from mm_tui.startup import Started


class BootFailed(Exception):
    """Start-up cannot go on; the message is printed after the window closes."""


COMMAND_HELP = {
    "/new": "start a new session",
    "/compact": "summarise the conversation to free the model's context",
    "/abort": "cancel the turn",
    "/ask": "hand a request to another agent (/ask AGENT …)",
    "/model": "switch the model, the conversation kept (/model NAME switches at once)",
    "/mode": "ask, auto or plan (Shift+Tab cycles them)",
    "/undo": "put back the files the last turn changed (/undo N: the last N turns)",
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
                lambda c=command: app.main.run_command(c),
                help=COMMAND_HELP.get(command),
            )

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        app = self.app
        assert isinstance(app, MMApp)
        for command in COMMANDS:
            score = matcher.match(command)
            if score > 0:
                yield Hit(
                    score, matcher.highlight(command), lambda c=command: app.main.run_command(c)
                )


class MMApp(App[int]):
    CSS = """
    Screen { background: $background; }
    """
    COMMANDS = App.COMMANDS | {SlashCommands}
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", show=True),
        Binding("ctrl+c", "interrupt", "Cancel/Quit", show=False, priority=True),
        Binding("ctrl+o", "fold_all", "Outputs", show=True),
        # priority: the screen binds Shift+Tab to moving the focus back, and would take it first
        Binding("shift+tab", "cycle_mode", "Mode", show=True, priority=True),
    ]
    _theme_chosen = False  # until `_first_theme`: see `get_css_variables`

    def __init__(
        self,
        boot: Callable[[], Awaitable[Started]],
        *,
        clock: Callable[[], float] = time.monotonic,
        theme: str | None = None,
    ) -> None:
        super().__init__()
        from mm_tui.window.theme_files import load_themes

        loaded = load_themes()
        for each in loaded.themes:
            self.register_theme(each)
        self._theme_warnings = loaded.warnings  # theme files left out, said once attached
        self._first_theme(theme if theme in self.available_themes else "mm-dark")
        self.boot = boot
        self.clock = clock
        self._signals = contextlib.ExitStack()  # the stop-signal handlers, from on_ready on
        self.main = MainScreen(clock)  # the conversation, and its controller
        self.engine: Engine | None = None
        # Set once the engine is attached (`attach`): configuration read, model server picked,
        # tools registered; a request sent from then on goes to the model at once. `ready_at` is
        # when (time.perf_counter()): bench_window_startup reads both, tests await the event.
        self.engine_ready = asyncio.Event()
        self.ready_at: float | None = None
        self.exit_message: str | None = None
        # The keys and pastes that come before the prompt replaces its stand-in, in order
        # (`_let_keys_through`); None once it has.
        self._held: list[events.Event] | None = []
        self._replaying: events.Event | None = None
        # the collector's full passes, kept short once ready (`full_passes.py`)
        self.collector = FullPasses()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            self.collector.key()
        if event is self._replaying:  # a held key, on its way now (`_let_keys_through`)
            await super().on_event(event)
            return
        if isinstance(event, events.Key) and not event.is_forwarded:
            event = named_key(event)  # xterm's form of Shift+Enter, before any binding
        held = self._held
        if (
            held is not None
            and isinstance(event, events.Key | events.Paste)
            and not event.is_forwarded  # from the terminal, not on its way to a widget
            and self.screen_stack[-1:] in ([], [self.main])  # not a question asked meanwhile
        ):
            # Until the prompt is there: its stand-in types what it can, the window's own keys
            # work, the rest waits for the prompt, and so does every key behind one that waits.
            typed = (
                self.main.type_early(event) if not held and isinstance(event, events.Key) else False
            )
            if typed is False:
                held.append(event)
                return
            if typed:
                return
        await super().on_event(event)

    @property
    def prompt_in_place(self) -> bool:
        """Whether the prompt has replaced its stand-in and had the keys held meanwhile."""
        return self._held is None

    async def _let_keys_through(self) -> None:
        """The prompt is there: the keys and pastes held until now go where they would have
        gone, in order, and so do those that come meanwhile, behind them. Each is handled to
        its end before the next goes: the app, the prompt, and the way back up to the app,
        where a key the prompt did not take finds its binding (an arrow moves the cursor so);
        sent at once, the keys behind it would reach the prompt first."""
        held = self._held or []
        while held:
            event = self._replaying = held.pop(0)
            self.post_message(event)
            nodes = [self]
            if self.focused is not None:
                nodes += self.focused.ancestors_with_self
            for node in nodes:
                handled = asyncio.Event()
                if node.call_later(handled.set):
                    await handled.wait()
        self._replaying = None
        self._held = None

    # -- start-up -------------------------------------------------------------------------

    def _first_theme(self, name: str) -> None:
        """Start in `name` without Textual's theme watcher: it re-parses every stylesheet one
        message after start, before the first frame (docs/performance.md). Nothing is parsed
        yet, so giving the stylesheet the theme's variables now does the same for nothing; the
        rest is what the watcher does (the theme classes, the ANSI colour filter)."""
        self.set_reactive(App.theme, name)
        self._theme_chosen = True
        dark = self.current_theme.dark
        classes = {c: False for c in self.classes if c.startswith("-theme-")}
        classes.update({f"-theme-{name}": True, "-dark-mode": dark, "-light-mode": not dark})
        self.update_classes(classes, update=False)
        self._refresh_truecolor_filter(self.ansi_theme)
        self.stylesheet.set_variables(self.get_css_variables())

    def get_css_variables(self) -> dict[str, str]:
        """The theme's variables, once `_first_theme` has chosen it. `App.__init__` asks for the
        default theme's (textual-dark's) to make its stylesheet, whose variables `_first_theme`
        replaces before anything is parsed: making them took about 1 ms of the way to the first
        frame, for nothing."""
        if not self._theme_chosen:
            return {}
        return super().get_css_variables()

    def get_default_screen(self) -> MainScreen:
        return self.main

    def on_ready(self) -> None:
        """After the first frame: only now load what start-up needs. From now on SIGTERM and
        SIGHUP (a closed terminal) quit as /quit does: the turn cancelled, its commands stopped,
        the session saved (`core/stop_signals.py`)."""
        from mm_tui.core.stop_signals import on_stop_signal, resume_only_after_suspend

        self._signals.enter_context(on_stop_signal(self._stop_on_signal))
        resume_only_after_suspend()  # a closing terminal's SIGCONT must not restart the driver
        self.main.status.show(None, "starting…")
        self._boot()

    def _stop_on_signal(self, signum: int) -> None:
        """Quit as /quit does, and end the process within STOP_GRACE seconds whatever happens
        (a closed terminal can leave the window's shutdown waiting: `core/stop_signals.py`)."""
        from mm_tui.core.stop_signals import STOP_GRACE, exit_by

        exit_by(STOP_GRACE, 128 + signum)
        self.exit(128 + signum)

    @work(exclusive=True, group="boot", exit_on_error=False)
    async def _boot(self) -> None:
        """The boot, then the prompt in place of its stand-in, which takes the typing until
        then (`prompt_stand_in.py`): the prompt's import and mount are not on the way to
        ready."""
        try:
            started = await self.boot()
        except Exception as exc:  # noqa: BLE001 - shown after the window closes
            self.exit_message = str(exc)
            self.exit(2)
            return
        self.attach(started)
        try:
            await self.main.take_prompt()
        finally:
            await self._let_keys_through()

    async def ask_trust(self, project: ProjectConfig) -> str:
        """Ask the person about a project config's keys that need trust (`TrustScreen`); runs in
        the boot's worker, before the engine starts."""
        from mm_tui.core.trust import visible
        from mm_tui.window.screens.trust import TrustScreen

        screen = TrustScreen(visible(str(project.path)), project.shown())
        answer = await self.push_screen(screen, wait_for_dismiss=True)
        return answer or "ignore"

    def attach(self, started: Started) -> None:
        """The engine is ready: the theme it asks for, then the main screen shows who is at
        work, a resumed session and what start-up noticed."""
        engine = started.engine
        self.engine = engine
        settings = engine.settings
        if settings.theme in self.available_themes and settings.theme != self.theme:
            self.theme = settings.theme
        theme_warnings = list(self._theme_warnings)
        if settings.theme not in self.available_themes:  # from --theme or the theme key
            names = ", ".join(sorted(self.available_themes))
            theme_warnings.append(f"no theme named {settings.theme} — themes: {names}")
        self.main.attach(started, started.warnings + theme_warnings)
        self.ready_at = time.perf_counter()
        self.engine_ready.set()
        self.collector.start(self)
        self.main.run_queued()

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver, but on Linux and macOS one whose input thread does not poll
        (`quiet_input.py`): an idle window is not woken ten times a second."""
        driver = super().get_driver_class()
        from textual.drivers.linux_driver import LinuxDriver

        if driver is LinuxDriver:
            from mm_tui.window.quiet_input import QuietLinuxDriver

            return QuietLinuxDriver
        return driver

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
        from mm_tui.window.screens.help import HelpScreen

        standing = self.engine.permissions.standing() if self.engine else {}
        instructions = self.engine.instructions.listing() if self.engine else []
        self.push_screen(HelpScreen(standing, instructions))

    def switch_theme(self, name: str) -> None:
        names = sorted(self.available_themes)
        if not name:
            self.main.notice("themes: " + ", ".join(names), "info")
            return
        if name not in self.available_themes:
            self.main.notice(f"no theme named {name} — themes: {', '.join(names)}", "warning")
            return
        self.theme = name

    # -- keys: the main screen's, bound here so that they work from any screen -------------

    def action_cancel(self) -> None:
        self.main.cancel_key()

    def action_interrupt(self) -> None:
        self.main.interrupt_key()

    def action_fold_all(self) -> None:
        self.main.fold_key()

    def action_cycle_mode(self) -> None:
        """Shift+Tab: the next mode on the main screen; elsewhere (a list, the help) it moves
        the focus back, as it does in any Textual screen."""
        if self.screen is self.main:
            self.main.cycle_mode()
        else:
            self.screen.focus_previous()

    async def on_unmount(self) -> None:
        self._signals.close()
        self.collector.stop()
        if self.engine is not None:
            self.engine.cancel()
            await self.engine.aclose()
