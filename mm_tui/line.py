"""Line mode (`mm --line`), one-shot `mm -p` and `mm --ask`: the engine's events printed with
Rich, as the terminal-display lines of the reference (docs/tools.md): `🛠️  bash: …`, the `🔐`
prompt, the recap, and `🗣 ask_agent: …` above what an asked agent writes. What mm does to keep
the conversation in the model's context (outputs shortened, the history compacted) is a dim line
of its own.

A diff (the permission prompt's of edit_file and write_file, and the numbered diff in the
preview of their result) is coloured when the terminal has colours: added lines green, removed
red, hunk headers cyan, file headers bold; the text stays the same.

Every text that comes from a model, a tool, a server, a page or a file goes through
`safe_display` before it is printed (commands, paths and the permission question through its
`exact` form): an escape sequence shows as `\\x1b[…`, it never reaches the terminal.

Before anything starts, `ask_trust` asks on the terminal about a project config's keys that need
the person's trust (config.py's NEEDS_TRUST), when line mode runs on a terminal.

Line editing and the history of requests: `line_history.py`."""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, assert_never

from rich.console import Console
from rich.text import Text

from mm_tui.core.events import (
    AgentFinished,
    AgentStarted,
    ComposingToolCall,
    ContextUsage,
    Decision,
    EngineError,
    Event,
    HistoryCompacted,
    HistoryShortened,
    ModelRetrying,
    PermissionRequested,
    ServerState,
    TextDelta,
    Thinking,
    ThoughtDelta,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    ToolProgress,
    TurnEnded,
    TurnStarted,
)
from mm_tui.core.terminal_text import safe_display
from mm_tui.core.text import agent_header, agent_title
from mm_tui.core.trust import visible
from mm_tui.engine.turn import Engine
from mm_tui.line_history import (
    LineHistory,
    history_path,
    keys_not_echoed,
    line_editor,
    readline_prompt,
    restore_terminal,
    terminal_state,
)
from mm_tui.line_stream import StreamPrinter
from mm_tui.startup import new_session_like

if TYPE_CHECKING:
    from mm_tui.config import ProjectConfig

PERMISSION_PROMPT = "🔐 allow {title}?  [a] once  [s] this session  [r] reject  [n] never: "
REQUEST_PROMPT = "› "
TRUST_PROMPT = "trust it?  [t] trust (remember)  [o] this time only  [i] ignore those keys: "
ANSWERS = {"", "a", "s", "r", "n"}  # what a permission question takes (empty: reject)
# Tools whose output is not echoed: a skill is for the model, not the screen.
SILENT_TOOLS = {"read_skill"}

DETAILS_LINES = 40  # lines of a permission request's details printed above the question


def preview(output: str, lines: int, diff: bool = False) -> list[str]:
    """Up to `lines` lines of a tool's output, or `(no output)`, safe to print. Split at
    newlines only (`splitlines` would also split at, and so hide, a lone CR, a form feed and
    the other breaks `safe_display` shows). `diff`: a result whose lines after its headline
    are a numbered diff: the lines shown start one line before the first change, so that the
    `-`/`+` lines are not cut for the context above them."""
    output = safe_display(output).rstrip("\n")
    shown = output.split("\n") if output else []
    if not shown:
        return ["(no output)"]
    if len(shown) <= lines:
        return shown
    if diff:
        changes = [i for i, line in enumerate(shown) if _is_change(line)]
        if changes:
            start = max(1, changes[0] - 1)  # the headline, then from just above the change
            kept = [shown[0], *shown[start : start + lines - 1]]
            rest = len(shown) - len(kept)
            return kept + [f"… {rest} more line{'s' if rest != 1 else ''}"]
    rest = len(shown) - lines
    return shown[:lines] + [f"… {rest} more line{'s' if rest != 1 else ''}"]


def _is_change(line: str) -> bool:
    match = NUMBERED_LINE.match(line)
    return match is not None and match[1] != " "


DIFF_ADDED = "green"
DIFF_REMOVED = "red"
DIFF_HUNK = "cyan"
DIFF_FILE = "bold"
# A line of diff.py's numbered diff (the tool result's preview): `  12 + │ text`.
NUMBERED_LINE = re.compile(r"\s*\d+ ([-+ ]) │ ")


def is_unified_diff(text: str) -> bool:
    """Whether a permission request's details are a unified diff (edit_file, write_file) rather
    than a command or a message, which must never be coloured as one."""
    lines = text.split("\n", 2)
    return len(lines) >= 2 and lines[0].startswith("--- ") and lines[1].startswith("+++ ")


def unified_diff_styles(lines: list[str], plain: str) -> list[str]:
    """The style of each line of a unified diff; `plain` for context lines and the rest, so the
    lines that are not changes look as they did before diffs had colours."""
    from mm_tui.tools.diff import unified_line_kinds

    styles = {"hunk": DIFF_HUNK, "header": DIFF_FILE, "added": DIFF_ADDED, "removed": DIFF_REMOVED}
    return [styles.get(kind, plain) for kind in unified_line_kinds(lines)]


def numbered_diff_style(line: str, plain: str) -> str:
    """The style of one line of a tool result's numbered diff (its headline and the `… N more
    lines` mark keep `plain`)."""
    if line.startswith("@@"):
        return DIFF_HUNK
    match = NUMBERED_LINE.match(line)
    if match is None or match[1] == " ":
        return plain
    return DIFF_ADDED if match[1] == "+" else DIFF_REMOVED


def has_colour(console: Console) -> bool:
    """Whether diff colours can show: not on a console without colours (a pipe, TERM=dumb), and
    not under NO_COLOR, where the lines keep exactly the styles they had before."""
    return console.color_system is not None and not console.no_color


class LinePrinter:
    """Turns events into printed lines. `ask` answers a permission request (line mode reads the
    keyboard; `-p` rejects)."""

    def __init__(
        self,
        console: Console,
        preview_lines: int,
        ask: Callable[[PermissionRequested], None],
    ) -> None:
        self.console = console
        self.preview_lines = preview_lines
        self.ask = ask
        # ("text" or "thought", the agent writing it) while one streams: an asked agent's
        # answer and this agent's own never share a line
        self._mode: tuple[str, str | None] | None = None
        self.stream = StreamPrinter(console)
        self.last_end: TurnEnded | None = None

    def _close_stream(self) -> None:
        self.stream.close()
        self._mode = None

    def __call__(self, event: Event) -> None:
        c = self.console
        if isinstance(event, TextDelta):
            if self._mode != ("text", event.agent):
                self._close_stream()
                self._mode = ("text", event.agent)
                self.stream.start(markdown=True)
            self.stream.write(event.text)
            return
        if isinstance(event, ThoughtDelta):
            if self._mode != ("thought", event.agent):
                self._close_stream()
                self._mode = ("thought", event.agent)
                self.stream.start(style="dim italic")
            self.stream.write(event.text)
            return
        self._close_stream()
        prefix = f"[{safe_display(event.agent)}] " if event.agent else ""
        match event:
            case ToolCallStarted():
                if event.display:  # ask_agent has none: its line comes with AgentStarted
                    c.print(Text(prefix + safe_display(event.display, exact=True)))
            case PermissionRequested():
                if event.details and event.details not in event.title:
                    lines = safe_display(event.details, exact=True).rstrip("\n").split("\n")
                    cut = len(lines) - DETAILS_LINES
                    lines = lines[:DETAILS_LINES]
                    if has_colour(c) and is_unified_diff(event.details):
                        styles = unified_diff_styles(lines, "dim")
                    else:
                        styles = ["dim"] * len(lines)
                    for line, style in zip(lines, styles, strict=True):
                        c.print(Text("    " + line, style=style))
                    if cut > 0:  # never cut silently: what is below may be what matters
                        more = f"… {cut} more line{'s' if cut != 1 else ''} not shown"
                        c.print(Text(f"    {more}", style="yellow"))
                self.ask(event)
            case ToolCallFinished():
                if event.tool in SILENT_TOOLS and event.status == "ok":
                    return
                style = "dim" if event.status == "ok" else "dim red"
                diff = bool(event.diff) and has_colour(c)
                for line in preview(event.output, self.preview_lines, bool(event.diff)):
                    line_style = numbered_diff_style(line, style) if diff else style
                    c.print(Text("    " + line, style=line_style))
            case EngineError():
                say(c, prefix + safe_display(event.message), "bold red")
            case AgentStarted():
                if event.asked_by is None:
                    name, rest = agent_header(event.title, event.model, event.provider)
                    c.print(Text.assemble((safe_display(name), "bold"), safe_display(rest)))
                else:
                    c.print(Text(safe_display(asked_line(event)), style="bold"))
            case HistoryShortened():
                say(c, prefix + safe_display(event.message), "dim")
            case HistoryCompacted():
                say(c, prefix + safe_display(event.title), "dim")
            case ModelRetrying():
                say(c, prefix + safe_display(event.text), "yellow")
            case TurnEnded():
                if event.agent is None:
                    self.last_end = event
                    c.print(Text(safe_display(event.recap(token_detail=True)), style="cyan"))
            case ServerState():
                pass  # a dead server is said by the retries and the error; no header here
            case AgentFinished():
                pass  # the stream it wrote is closed above
            case ContextUsage():
                pass  # the recap that ends the turn says how full the context is
            case (
                TurnStarted()
                | Thinking()
                | ComposingToolCall()
                | ToolCallRunning()
                | ToolProgress()
            ):
                pass  # the request was typed on the line above; no spinner in line mode
            case _:
                assert_never(event)


def asked_line(event: AgentStarted) -> str:
    """`🗣 ask_agent: <agent> (<provider>/<model>) — <first line of the prompt>`."""
    from mm_tui.tools.ask_agent import first_line

    return (
        f"🗣 ask_agent: {event.name} ({event.provider}/{event.model}) — "
        f"{first_line(event.prompt, limit=None)}"
    )


def permission_title(request: PermissionRequested) -> str:
    """The call a permission request is about, safe to print with every control character
    visible (`exact`: the question must show what will run); an asked agent's calls name the
    agent."""
    return safe_display(agent_title(request.agent, request.title), exact=True)


def say(console: Console, text: str, style: str) -> None:
    """A sentence for the person (a note, an error, a notice): on a terminal it wraps between
    words, as the answer does; a pipe gets it on one line. Commands and outputs are printed
    as they are, never reflowed."""
    console.print(Text(text, style=style), soft_wrap=not console.is_terminal)


def banner(console: Console, engine: Engine, notes: list[str]) -> None:
    client = engine.client
    name, rest = agent_header(engine.settings.acp.title, client.model, client.provider)
    header = Text.assemble((safe_display(name), "bold"), safe_display(rest))
    if engine.permissions.yolo:
        header.append(" · ").append(" yolo ", style="reverse")
    console.print(header)
    console.print(Text(safe_display(str(engine.cwd), exact=True), style="dim"))
    for note in notes:
        say(console, safe_display(note), "yellow")


def exit_status(ended: TurnEnded | None) -> int:
    if ended is None:
        return 1
    if ended.stop_reason == "end_turn":
        return 0
    if ended.stop_reason == "cancelled":
        return 130
    return 1


async def run_print(engine: Engine, prompt: str, console: Console) -> int:
    """`mm -p`: one turn; every call that would ask is rejected; the exit status says how the
    turn ended."""

    printer = LinePrinter(
        console, engine.settings.preview_lines, _rejecter(console, "mm -p", engine)
    )
    try:
        # One request, and nobody to see tools arrive later: the MCP servers are waited for
        # (each at most its startupTimeout), and what they say goes to stderr with the notes.
        await engine.registry.ready()
        engine.registry.listen(engine.redacting(_to_stderr))
        ended = await engine.run_turn(prompt, printer)
    finally:
        await engine.aclose()
    return exit_status(ended)


async def run_ask_print(engine: Engine, agent: str, prompt: str, console: Console) -> int:
    """`mm --ask AGENT "…"`: one /ask exchange, printed as in line mode; every call that would
    ask (the asked agent's own, under its `yolo: false`) is rejected; the exit status says how
    it ended (1 for any `[ask_agent: …]` error)."""
    printer = LinePrinter(
        console, engine.settings.preview_lines, _rejecter(console, "mm --ask", engine)
    )
    try:
        ended = await engine.run_ask(agent, prompt, printer)
    finally:
        await engine.aclose()
    return exit_status(ended)


def _to_stderr(event: Event) -> None:
    """What happens outside the turn's own lines in `mm -p` (an MCP server's warning)."""
    if isinstance(event, EngineError):
        print(f"mm: {safe_display(event.message)}", file=sys.stderr, flush=True)


def _rejecter(
    console: Console, program: str, engine: Engine
) -> Callable[[PermissionRequested], None]:
    def reject(request: PermissionRequested) -> None:
        title = permission_title(request)
        console.print(Text(f"🔐 {title}: rejected ({program} does not ask)", style="yellow"))
        engine.answer(request.agent, request.call_id, Decision.REJECT)

    return reject


class KeyboardReader:
    """Reads lines in a daemon thread so the event loop never blocks on the keyboard, and an
    abandoned read (Ctrl-C twice at the prompt) never keeps the process alive. With `editing`,
    `input()` goes through readline (imported by `line_editor`).

    A read whose asker goes away (a permission question whose turn was cancelled) still waits in
    `input()`: its line goes to the next asker, which says its own prompt meanwhile, so what is
    typed next is never swallowed by a question nobody asks any more. `prompt_of_last` tells at
    which prompt the last line was typed."""

    def __init__(self, editing: bool = False) -> None:
        self._loop = asyncio.get_running_loop()
        self.editing = editing
        self._threads: list[threading.Thread] = []
        self._read: asyncio.Future[str | None] | None = None  # in input(), or its line untaken
        self._read_prompt = ""
        self.prompt_of_last = ""

    @property
    def busy(self) -> bool:
        """Whether a thread still waits in `input()` (a read abandoned at quitting)."""
        self._threads = [t for t in self._threads if t.is_alive()]
        return bool(self._threads)

    async def read(self, prompt: str) -> str | None:
        """A line, or None at end of input."""
        future = self._read
        if future is None:
            future = self._read = self._start(prompt)
            self._read_prompt = prompt
        elif not future.done() and prompt != self._read_prompt:
            # input() still shows the prompt of the asker that went away
            sys.stdout.write(f"\n{prompt}")
            sys.stdout.flush()
            self._read_prompt = prompt
        line = await asyncio.shield(future)  # a cancelled asker leaves the line to the next
        if self._read is future:
            self._read = None
            self.prompt_of_last = self._read_prompt
        return line

    def redraw(self) -> None:
        """The prompt again, on a line of its own, with what was typed so far (readline keeps
        it): after a line printed while the keyboard was read (Ctrl-C's hint), the `›` would
        otherwise be gone from the screen while input() still waits."""
        future = self._read
        if future is None or future.done():
            return
        typed = ""
        if self.editing:
            import readline

            typed = readline.get_line_buffer()
        sys.stdout.write(f"{self._read_prompt}{typed}")
        sys.stdout.flush()

    def _start(self, prompt: str) -> asyncio.Future[str | None]:
        future: asyncio.Future[str | None] = self._loop.create_future()
        if self.editing:
            prompt = readline_prompt(prompt)

        def worker() -> None:
            try:
                line: str | None = input(prompt)
            except (EOFError, OSError, ValueError):
                line = None
            self._loop.call_soon_threadsafe(_settle, future, line)

        thread = threading.Thread(target=worker, name="mm-keyboard", daemon=True)
        self._threads.append(thread)
        thread.start()
        return future


def _settle(future: asyncio.Future[str | None], value: str | None) -> None:
    if not future.done():
        future.set_result(value)


async def run_line(engine: Engine, console: Console, notes: list[str]) -> int:
    """The line-mode REPL. Ctrl-C cancels the running turn; at the prompt, Ctrl-C twice or
    Ctrl-D quits. Up/Down recall the requests of this run and of earlier ones (`history_path`)."""
    banner(console, engine, notes)
    editor = line_editor()

    def warn(message: str) -> None:
        say(console, message, "dim")

    history = None
    if editor is not None:
        history = LineHistory(editor, history_path(), warn=warn, redact=engine.redactor.text)
    recall = " Up/Down recall earlier requests." if editor is not None else ""
    say(
        console,
        "Type a request; /ask AGENT … hands one to an agent of mmConfigs, /new starts over, "
        f"/help lists the commands, /quit leaves. Ctrl-C cancels a turn.{recall}",
        "dim",
    )
    loop = asyncio.get_running_loop()
    keyboard = KeyboardReader(editing=editor is not None)
    terminal = terminal_state() if editor is not None else None
    quit_requested = asyncio.Event()
    interrupts = 0
    pending_answers: list[asyncio.Task[None]] = []

    def on_sigint() -> None:
        nonlocal interrupts
        if engine.cancel():
            console.print(Text("\n(cancelling the turn)", style="dim"))
            return
        interrupts += 1
        if interrupts >= 2:
            quit_requested.set()
        else:
            console.print(Text("\n(press Ctrl-C again or Ctrl-D to quit)", style="dim"))
            keyboard.redraw()

    def ask(request: PermissionRequested) -> None:
        async def answer() -> None:
            while engine.questions.waiting(request.agent, request.call_id):
                title = permission_title(request)
                line = await keyboard.read(PERMISSION_PROMPT.format(title=title))
                key = (line or "r").strip().lower()[:1]
                if key not in {"a", "s", "r", "n"}:
                    console.print(Text("answer a, s, r or n", style="yellow"))
                    continue
                engine.answer(request.agent, request.call_id, Decision(key))

        pending_answers.append(loop.create_task(answer()))

    async def next_line() -> str | None:
        reading = loop.create_task(keyboard.read(REQUEST_PROMPT))
        quitting = loop.create_task(quit_requested.wait())
        done, _ = await asyncio.wait({reading, quitting}, return_when=asyncio.FIRST_COMPLETED)
        quitting.cancel()
        if reading in done:
            return reading.result()
        reading.cancel()
        return None

    printer = LinePrinter(console, engine.settings.preview_lines, ask)
    # with readline (a terminal), keys typed while a turn prints wait for the next prompt
    quiet = keys_not_echoed if editor is not None else contextlib.nullcontext
    # an MCP server that fails says so when it does
    engine.registry.listen(engine.redacting(printer))
    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (NotImplementedError, RuntimeError):  # not the main thread: Ctrl-C stays default
        pass
    try:
        while True:
            line = await next_line()
            if line is None:
                console.print()
                return 0
            interrupts = 0
            text = line.strip()
            if keyboard.prompt_of_last != REQUEST_PROMPT and text.lower() in ANSWERS:
                # typed at a permission question as its turn was cancelled: an answer to
                # nothing, not a request
                console.print(Text("(the question had ended; that answer was not sent)", "dim"))
                continue
            if not text:
                continue
            if history is not None:
                history.add(line)
            if text in {"/quit", "/exit"}:
                return 0
            if text == "/new":
                engine.new_session(new_session_like(engine))
                console.print(Text("new session", style="dim"))
                continue
            if text == "/compact":
                try:
                    await engine.compact(printer)
                except Exception as exc:  # noqa: BLE001 - said, the session goes on
                    console.print(Text(safe_display(f"/compact failed: {exc}"), style="red"))
                continue
            if text.startswith("/") and text.split()[0] != "/ask":
                said = await line_command(engine, text)
                console.print(Text(safe_display(said), style="dim"))
                continue
            if text == "/ask" or text.startswith("/ask "):
                from mm_tui.tools.ask_agent import ask_usage, split_ask

                asked = split_ask(text[len("/ask") :])
                if asked is None:
                    usage = safe_display(ask_usage(engine.registry.get("ask_agent")))
                    console.print(Text(usage, style="yellow"))
                    continue
                with quiet():
                    await engine.run_ask(*asked, printer)
            else:
                with quiet():
                    await engine.run_turn(text, printer)
            for task in pending_answers:
                task.cancel()
            pending_answers.clear()
    finally:
        try:
            loop.remove_signal_handler(signal.SIGINT)
        except (NotImplementedError, RuntimeError):
            pass
        if terminal is not None and keyboard.busy:
            restore_terminal(terminal)
        await engine.aclose()


LINE_COMMANDS = {
    "/new": "start a new session",
    "/compact": "summarise the conversation to free the model's context",
    "/ask AGENT …": "hand one request to an agent of mmConfigs",
    "/sessions": "list this project's sessions; /sessions ID reopens one",
    "/help": "these commands and keys",
    "/quit": "leave mm (/exit too)",
}
"""Line mode's commands: what the window has, but for its screens (themes, the keys panel)."""


async def line_command(engine: Engine, text: str) -> str:
    """What a line that starts with `/` does in line mode, other than /quit, /new, /compact and
    /ask (run by the loop): the words to print. Never a request: a command mistyped, or the
    window's that line mode has not, costs no turn (a line of text that starts with a slash
    can start with a space instead)."""
    command, _, rest = text.partition(" ")
    rest = rest.strip()
    if command == "/help":
        width = max(len(name) for name in LINE_COMMANDS)
        lines = [f"  {name.ljust(width)}  {what}" for name, what in LINE_COMMANDS.items()]
        keys = (
            "Ctrl-C cancels a turn; at the prompt Ctrl-C twice or Ctrl-D quits; Up/Down recall "
            "earlier requests; a permission question takes a (allow), s (allow for the session), "
            "r (reject) or n (never)."
        )
        return "\n".join(["commands:", *lines, keys])
    if command == "/sessions":
        return await _sessions(engine, rest)
    if command == "/abort":
        return "no turn is running: Ctrl-C cancels one while it runs"
    if command == "/theme":
        return "themes are the window's: line mode prints in your terminal's own colours"
    return f"unknown command {command} — /help lists them"


async def _sessions(engine: Engine, wanted: str) -> str:
    """`/sessions`: this project's sessions, newest first; `/sessions ID` reopens one here."""
    from mm_tui.config import sessions_folders
    from mm_tui.engine.session import SessionError
    from mm_tui.engine.session_listing import find_session, list_sessions_in

    folders = sessions_folders(engine.settings, engine.cwd)
    if wanted:
        try:
            session = await asyncio.to_thread(find_session, folders, wanted)
        except SessionError as exc:
            return str(exc)
        engine.new_session(session)
        return "\n".join([f"resumed session {session.id}", *session.warnings])
    found = await asyncio.to_thread(list_sessions_in, folders)
    if not found:
        return "no sessions yet"
    shown = [
        f"  {info.id}  {info.updated[:16].replace('T', ' ')}  {info.message_count:>4} "
        f"{'message ' if info.message_count == 1 else 'messages'}  {info.title or '(empty)'}"
        for info in found[:20]
    ]
    more = [f"  … and {len(found) - 20} more"] if len(found) > 20 else []
    return "\n".join(["sessions (newest first; /sessions ID reopens one):", *shown, *more])


def trust_question(project: ProjectConfig) -> list[str]:
    """What the person is shown about a project config that needs trust: its path, and the keys
    only they can allow, each with its value, control characters made visible."""
    return [
        f"mm: {visible(str(project.path))} sets what only you can allow:",
        *(f"  {line}" for line in project.shown()),
    ]


def ask_trust(project: ProjectConfig) -> str:
    """Line mode's question about a project config that needs trust, asked on the terminal
    before anything starts: one of TRUST_ANSWERS, read as a line (`t`, `o`, `i`, or the whole
    word). The end of input, or Ctrl+C, is "ignore": nothing is allowed without an answer."""
    answers = {"t": "trust", "o": "once", "i": "ignore"}
    print("\n".join(trust_question(project)), flush=True)
    while True:
        try:
            line = input(TRUST_PROMPT).strip().lower()
        except (EOFError, KeyboardInterrupt):
            print(flush=True)
            return "ignore"
        answer = answers.get(line[:1]) if line in (*answers, *answers.values()) else None
        if answer is not None:
            return answer


def stdout_console() -> Console:
    return Console(file=sys.stdout, highlight=False, soft_wrap=True)
