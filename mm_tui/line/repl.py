"""Line mode's REPL (`mm --line`): requests read from the keyboard in a thread, permission
questions asked on the same line reader, Ctrl-C that cancels a turn, and the slash commands line
mode has (the window's, but for its screens)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from collections.abc import Awaitable, Callable

from rich.console import Console
from rich.text import Text

from mm_tui.core.events import (
    Answer,
    Decision,
    PermissionRequested,
    RuleToSave,
)
from mm_tui.core.terminal_text import safe_display
from mm_tui.engine.turn import Emit, Engine
from mm_tui.line.history import (
    LineHistory,
    history_path,
    keys_not_echoed,
    line_editor,
    readline_prompt,
    restore_terminal,
    terminal_state,
)
from mm_tui.line.printer import (
    LinePrinter,
    banner,
    permission_title,
    say,
)
from mm_tui.startup import new_session_like

RULE_PROMPT = '🔐 allow {title}?  [a] once  [s] this session  [p] rule "{pattern}"  [r] reject  [t] say why  [n] never: '
WORDLESS_PROMPT = (
    "🔐 allow {title}?  [a] once  [s] this session  [r] reject  [t] say why  [n] never: "
)
REQUEST_PROMPT = "› "
ANSWERS = {"", "a", "s", "p", "r", "t", "n"}  # what a permission question takes (empty: reject)


def permission_keys(request: PermissionRequested) -> str:
    """The answers a question takes: `p` only when there is a rule to offer."""
    return "asprtn" if request.pattern else "asrtn"


def permission_prompt(request: PermissionRequested) -> str:
    title = permission_title(request)
    if request.pattern:
        return RULE_PROMPT.format(title=title, pattern=safe_display(request.pattern, exact=True))
    return WORDLESS_PROMPT.format(title=title)


async def worded_answer(
    key: str, request: PermissionRequested, read: Callable[[str], Awaitable[str | None]]
) -> Answer | None:
    """The answer of `key`; `p` asks for the rule (Enter keeps the one offered), `t` for the
    reason. None: the line was left empty for a rule, so the question is asked again."""
    if key == "p":
        typed = (await read(f"rule to allow in this project [{request.pattern}]: ") or "").strip()
        rule = RuleToSave(tool=request.tool, pattern=typed or request.pattern, place="project")
        return Answer(Decision.ALLOW_ONCE, rule=rule)
    if key == "t":
        reason = (await read("why (the model reads it): ") or "").strip()
        return Answer(Decision.REJECT, reason=reason)
    return Answer(Decision(key))


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
                line = await keyboard.read(permission_prompt(request))
                key = (line or "r").strip().lower()[:1]
                if key not in permission_keys(request):
                    console.print(Text(f"answer {', '.join(permission_keys(request))}", "yellow"))
                    continue
                given = await worded_answer(key, request, keyboard.read)
                if given is not None:
                    engine.answer(request.agent, request.call_id, given)

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
            if text == "/mode" or text.startswith("/mode "):
                said = mode_command(engine, text[len("/mode") :].strip(), printer)
                if said:
                    console.print(Text(safe_display(said), style="dim"))
                continue
            if text == "/model" or text.startswith("/model "):
                said = await model_command(engine, text[len("/model") :].strip(), printer)
                console.print(Text(safe_display(said), style="dim"))
                continue
            if text == "/undo" or text.startswith("/undo "):
                said = await undo_command(
                    engine,
                    text[len("/undo") :].strip(),
                    printer,
                    keyboard.read,
                    lambda words: console.print(Text(safe_display(words))),
                )
                if said:
                    console.print(Text(safe_display(said), style="dim"))
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
    "/model": "list the server's models; /model NAME switches, the conversation kept",
    "/mode": "ask, auto or plan: who decides what runs (/mode NAME switches)",
    "/undo [N]": "put back the files the last N turns changed (asks first); again: redo",
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


def mode_command(engine: Engine, name: str, emit: Emit) -> str:
    """`/mode`: the session's mode and the others; `/mode NAME` switches (the printer says it
    through `emit`). Leaving plan mode says how to carry the plan out."""
    from mm_tui.core.events import MODE_WORDS
    from mm_tui.engine.permissions import MODES

    mode = engine.permissions.mode
    if name not in MODES:
        lines = [f"{'*' if m == mode else ' '} {m}  {MODE_WORDS[m]}" for m in MODES]
        return "\n".join(["modes (/mode NAME switches):", *lines])
    engine.set_mode(name, emit)  # type: ignore[arg-type]  # one of MODES
    if mode == "plan" and name != "plan":
        return "the plan stays in the conversation: ask to carry it out"
    return ""


async def model_command(engine: Engine, name: str, emit: Emit) -> str:
    """`/model`: the server's models, the one in use marked; `/model NAME` switches to one
    (engine/model_choice.py), the conversation kept: the words to print."""
    from mm_tui.engine.model_choice import choose_model, model_lines, offered_models

    try:
        if name:
            notes = await choose_model(engine, name, emit)
            return "\n".join(notes)
        models = await offered_models(engine.client)
    except Exception as exc:  # noqa: BLE001 - said, the session goes on
        return f"/model failed: {exc}"
    lines = model_lines(models, engine.client.model)
    return "\n".join(["models (/model NAME switches; the conversation stays):", *lines])


UNDO_QUESTION = "change the files? [y/N] "


async def undo_command(
    engine: Engine,
    rest: str,
    emit: Emit,
    read: Callable[[str], Awaitable[str | None]],
    show: Callable[[str], None],
) -> str:
    """`/undo [N]`: the plan (engine/undoing.py) shown through `show`, the question read
    through `read`, the files changed on y: the words to print after it."""
    from mm_tui.engine.undo.snapshots import UndoError

    if rest and not rest.isdigit():
        return "/undo N: N is a number of turns (/undo alone: the last one)"
    try:
        pending = await engine.plan_undo(int(rest) if rest else None)
    except UndoError as exc:
        return f"/undo: {exc}"
    plan = pending.plan
    if not plan.changes and not plan.left:
        return "/undo: nothing to change, the files are as they were"
    show("\n".join([plan.title, *(f"  {line}" for line in plan.lines())]))
    if not plan.changes:
        return "/undo: nothing /undo can change"
    answer = await read(UNDO_QUESTION)
    if (answer or "").strip().lower() not in ("y", "yes"):
        return "/undo: the files are kept as they are"
    try:
        await engine.undo(pending, emit)
    except UndoError as exc:
        return f"/undo: {exc}"
    return ""


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
