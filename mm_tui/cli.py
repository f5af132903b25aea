"""`mm`: flags to one front end.

`mm` and `mm --window` open window mode; `--line`, `-p` and `--ask` print lines; `-acp` serves
ACP over stdio; `--doctor` probes the model and prints what it found. Start-up errors (a broken
config file, a server that cannot be reached) end in one line on stderr and exit 2.
"""

from __future__ import annotations

import asyncio
import gc
import os
import stat
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, BinaryIO, cast

from mm_tui import __version__
from mm_tui.core.terminal_text import safe_display

if TYPE_CHECKING:
    import argparse

    from mm_tui.config import ProjectConfig, Settings
    from mm_tui.startup import Started


def _version_action() -> type[argparse.Action]:
    import argparse

    class _Version(argparse.Action):
        """`--version`: the installed distribution's version (importlib.metadata, read only
        when asked: its import is not paid at every start), the source's when mm runs
        uninstalled."""

        def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **_: object):
            super().__init__(option_strings, dest, nargs=0, help="print mm's version and exit")

        def __call__(
            self,
            parser: argparse.ArgumentParser,
            namespace: argparse.Namespace,
            values: object,
            option_string: str | None = None,
        ) -> None:
            from importlib.metadata import PackageNotFoundError, version

            try:
                number = version("mm-tui")
            except PackageNotFoundError:
                number = __version__
            print(f"mm {number}")
            parser.exit()

    return _Version


def parser() -> argparse.ArgumentParser:
    """mm's flags. argparse is imported here, not with the module: most starts are read by
    `parse_flags` without it."""
    import argparse

    p = argparse.ArgumentParser(
        prog="mm",
        description="mm: a terminal coding agent for OpenAI-compatible model servers.",
    )
    front = p.add_mutually_exclusive_group()
    front.add_argument("--window", action="store_true", help="full-screen window mode (default)")
    front.add_argument("--line", action="store_true", help="line mode: a REPL printing lines")
    front.add_argument(
        "-p", "--print", dest="prompt", metavar="PROMPT", help="run one turn, print it, exit"
    )
    front.add_argument("-acp", "--acp", action="store_true", help="serve ACP over stdio")
    front.add_argument(
        "--ask", nargs=2, metavar=("AGENT", "PROMPT"), help="hand one turn to an agent of mmConfigs"
    )
    p.add_argument(
        "--demo", action="store_true", help="the built-in demo model in a throw-away playground"
    )
    p.add_argument(
        "--doctor",
        action="store_true",
        help="probe the model now (tools, streaming, reasoning, window, speed), print what it "
        "found, exit",
    )
    p.add_argument(
        "--config", metavar="FILE", help="an agent file merged over the other config files"
    )
    p.add_argument("--model", help="the model name")
    p.add_argument(
        "--base-url",
        dest="base_url",
        metavar="URL",
        help="the server, e.g. http://localhost:11434/v1",
    )
    p.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="ID",
        help="resume a session (the latest without ID)",
    )
    p.add_argument(
        "--yolo",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run every tool call without asking",
    )
    p.add_argument(
        "--mode",
        choices=("ask", "auto", "plan"),
        help="ask before changes, auto (run everything, as --yolo), or plan (look and plan only)",
    )
    p.add_argument("--theme", help="window theme")
    p.add_argument("--version", action=_version_action())
    return p


PLAIN_FLAGS = {
    "--window": ("window", True),
    "--demo": ("demo", True),
    "--doctor": ("doctor", True),
    "--yolo": ("yolo", True),
    "--no-yolo": ("yolo", False),
}
"""The flags `parse_flags` reads itself: each alone, no value, no other flag it excludes."""
DEFAULTS: dict[str, object] = {
    "window": False,
    "line": False,
    "prompt": None,
    "acp": False,
    "ask": None,
    "demo": False,
    "doctor": False,
    "config": None,
    "model": None,
    "base_url": None,
    "resume": None,
    "yolo": None,
    "mode": None,
    "theme": None,
    "version": None,
}
"""What `parser()` gives a flag that is not there."""


def parse_flags(argv: list[str] | None) -> argparse.Namespace:
    """The flags as `parser().parse_args` reads them. `mm`, `mm --demo` and the like (only
    flags of PLAIN_FLAGS) are read here: importing argparse, building the parser and parsing
    cost window mode's first frame about 1% of a bare Textual app's (docs/performance.md).
    Anything else (a value, a prefix, --help, a mistake) goes to argparse, which says what it
    says. `tests/program/test_startup.py` holds the two to the same namespace."""
    words = sys.argv[1:] if argv is None else argv
    if not all(word in PLAIN_FLAGS for word in words):
        return parser().parse_args(argv)
    values = dict(DEFAULTS)
    for word in words:
        name, value = PLAIN_FLAGS[word]
        values[name] = value
    return cast("argparse.Namespace", SimpleNamespace(**values))


def _overrides(args: argparse.Namespace) -> dict[str, object]:
    """The flags that override the config files. --yolo and --no-yolo name a mode too (auto,
    ask), so that they win over a `mode` in a config file; --mode wins over both."""
    mode = args.mode
    if mode is None and args.yolo is not None:
        mode = "auto" if args.yolo else "ask"
    return {
        "model": args.model,
        "baseUrl": args.base_url,
        "yolo": args.yolo,
        "mode": mode,
        "theme": args.theme,
    }


def main(argv: list[str] | None = None) -> int:
    _without_httpx_command_line()
    args = parse_flags(argv)
    if not (sys.stdout.encoding or "").lower().replace("-", "").startswith("utf"):
        from mm_tui.terminal.ascii_terminal import use_ascii_where_needed

        use_ascii_where_needed()
    cwd = Path.cwd()
    window = not (args.line or args.prompt is not None or args.acp or args.ask or args.doctor)
    if args.demo and not (
        window or args.doctor
    ):  # the window makes it beside its first frame (`run_window`)
        from mm_tui.engine.playground import make_playground

        cwd = make_playground()
        os.chdir(cwd)
    if window:
        missing = _not_a_terminal()
        if missing:
            print(f"mm: {missing}", file=sys.stderr)
            return 2
        return run_window(args, cwd)
    if args.prompt is not None:
        request = with_piped_input(args.prompt, getattr(sys.stdin, "buffer", None))
        if request is None:
            print("mm: -p -: no text came on stdin", file=sys.stderr)
            return 2
        args.prompt = request
    _prepare_tls(args)
    from mm_tui.config import ConfigError, load_settings, read_project

    try:
        project = read_project(cwd)
        for line in _review_project(project, ask=args.line and _on_a_terminal()):
            print(line, file=sys.stderr)
        settings = load_settings(
            config_file=args.config, overrides=_overrides(args), cwd=cwd, project=project
        )
    except ConfigError as exc:
        print(safe_display(str(exc)), file=sys.stderr)
        return 2
    if args.doctor:
        from mm_tui.line.doctor import run_doctor

        return asyncio.run(run_doctor(settings, demo=args.demo))
    if args.acp:
        from mm_tui.acp import run as run_acp

        return run_acp(settings, cwd, demo=args.demo)
    from mm_tui.core.stop_signals import run_stoppable

    try:  # SIGTERM and SIGHUP end a mode as closing its input does (core/stop_signals.py)
        return asyncio.run(run_stoppable(_run(args, settings, cwd)))
    except KeyboardInterrupt:
        return 130


def _without_httpx_command_line() -> None:
    """Keep httpx from importing its command-line client, which mm never runs: with click
    installed (mcp installs it) `import httpx` also loads click, pygments and Rich's progress
    bars. A None in sys.modules makes that import fail, and httpx falls back to the stub it
    has for a missing `httpx[cli]`. A choice for the whole process, so the program makes it
    here, not a package as it is imported: see docs/performance.md."""
    sys.modules.setdefault("httpx._main", None)  # type: ignore[assignment] - None blocks it


def _on_a_terminal() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def _not_a_terminal() -> str:
    """Why window mode cannot run here, or "": it reads keys from stdin and draws on stdout, so
    both must be a terminal. Without one (`echo x | mm`, `ssh host mm` without `-t`) the window
    would wait for keys that never come, and outlive a closed connection."""
    for name, stream in (("stdin", sys.stdin), ("stdout", sys.stdout)):
        if stream is None or not stream.isatty():
            return (
                f"window mode needs a terminal, and {name} is not one. For one request: "
                'mm -p "…" (text piped in is added to it); for a conversation: mm --line '
                "(or ssh -t for a terminal over SSH)"
            )
    return ""


PIPED_LIMIT = 4 * 1024 * 1024
"""The most of piped input `-p` takes (bytes); more is cut, and said."""


def with_piped_input(prompt: str, stdin: BinaryIO | None) -> str | None:
    """`-p`'s request: the prompt, followed by what is piped in (`git diff | mm -p "review
    this"`), as other agents take it; `-p -` is stdin's text alone (a terminal's too, up to an
    end of input), None when none came. Otherwise only a pipe or a file is read, never a
    terminal (a person would have to type an end of input to go on) nor anything else a
    program may leave as stdin (/dev/null, a socket)."""
    if stdin is None:
        return None if prompt == "-" else prompt
    if prompt != "-":
        try:
            mode = os.fstat(stdin.fileno()).st_mode
        except (OSError, ValueError):
            return prompt
        if not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
            return prompt
    try:
        data = stdin.read(PIPED_LIMIT + 1)
    except OSError:
        data = b""
    text = data[:PIPED_LIMIT].decode("utf-8", errors="replace")
    if len(data) > PIPED_LIMIT:
        print(f"mm: piped input cut at {PIPED_LIMIT // 1024 // 1024} MiB", file=sys.stderr)
    if prompt == "-":
        return text if text.strip() else None
    if not text.strip():
        return prompt
    return f"{prompt}\n\n{text}"


def _review_project(project: ProjectConfig | None, *, ask: bool) -> list[str]:
    """The project config's keys that need trust, before anything else starts: line mode asks
    the person on the terminal (`ask`); `-p`, `--ask` and `-acp` ask nobody and leave those
    keys out. Returns the warnings to print (on stderr: the ACP client shows or logs it)."""
    from mm_tui.config import answer_project

    if project is None:
        return []
    lines = [project.warning] if project.warning else []
    if not project.needs_answer:
        return lines
    if not ask:
        return [*lines, project.left_out()]
    from mm_tui.line.trust import ask_trust

    for line in lines:
        print(line, file=sys.stderr)
    answer = ask_trust(project)
    problem = answer_project(project, answer)
    return [problem] if problem else []


def run_window(args: argparse.Namespace, cwd: Path) -> int:
    """Window mode. The configuration and the model load after the first frame (see `MMApp`);
    a start-up error closes the window and is printed as one line.

    No garbage collection until the engine is ready (`window_boot`): start-up makes some
    hundred thousand objects that live as long as mm and little garbage, and the collector's
    passes over them cost start-up time (docs/performance.md). Once ready, what start-up made
    is frozen (the collector's later passes skip it) and collection resumes."""
    gc.disable()
    try:
        from mm_tui.window.app import MMApp

        boot = window_boot(
            args,
            cwd,
            gc_paused=True,
            ask=lambda project: app.ask_trust(project),
            playground=_playground_meanwhile if args.demo else None,
        )
        app = MMApp(boot, theme=args.theme)
        code = app.run()
    finally:
        gc.enable()  # in case the boot never ran
    if app.exit_message:
        print(safe_display(app.exit_message), file=sys.stderr)
    return code if isinstance(code, int) else 0


def _playground_meanwhile() -> Callable[[], Path]:
    """Start making `mm --demo`'s playground in a thread; the function returned gives it (or
    raises what making it raised). The boot starts it after the first frame and imports the
    configuration and the engine meanwhile: its folder and files are system calls, which run
    beside those imports. Started before the window, the thread took 3 ms of CPU from the way
    to the first frame (docs/performance.md)."""
    import threading
    from concurrent.futures import Future

    from mm_tui.engine.playground import make_playground

    made: Future[Path] = Future()

    def make() -> None:
        try:
            made.set_result(make_playground())
        except BaseException as exc:  # noqa: BLE001 - given to the boot, which says it
            made.set_exception(exc)

    threading.Thread(target=make, name="mm-playground", daemon=True).start()
    return made.result


def window_boot(
    args: argparse.Namespace,
    cwd: Path,
    *,
    gc_paused: bool = False,
    ask: Callable[[ProjectConfig], Awaitable[str]] | None = None,
    playground: Callable[[], Callable[[], Path]] | None = None,
) -> Callable[[], Awaitable[Started]]:
    """What window mode runs after its first frame: the configuration, the model, the engine.
    A configuration or start-up error becomes the one line the window closes with.
    `gc_paused`: `run_window` paused the garbage collector; it resumes when the boot ends.
    `ask`: asks the person about a project config's keys that need trust (one of
    TRUST_ANSWERS) before anything starts; without it they are left out, with a warning.
    `playground`: starts making the demo's playground (`_playground_meanwhile`) and gives a
    function that gives it: the folder the boot then works in, instead of `cwd`."""

    async def boot() -> Started:
        nonlocal cwd
        try:
            made = playground() if playground is not None else None
            from mm_tui.config import ConfigError, answer_project, load_settings, read_project
            from mm_tui.startup import StartupError, start

            if made is not None:
                try:
                    cwd = made()  # the thread ran beside the imports above
                except OSError as exc:
                    raise RuntimeError(
                        f"mm: the demo's playground cannot be made ({exc})"
                    ) from None
                os.chdir(cwd)

            try:
                project = read_project(cwd)
                warnings = _review_project(project, ask=False) if ask is None else []
                if ask is not None and project is not None:
                    warnings = [project.warning] if project.warning else []
                    if project.needs_answer:
                        problem = answer_project(project, await ask(project))
                        warnings += [problem] if problem else []
                settings = load_settings(
                    config_file=args.config, overrides=_overrides(args), cwd=cwd, project=project
                )
                if _asks_over_tls(settings):  # else made once ready (provider.prepare)
                    _prepare_tls(args)
                started = await start(
                    settings, cwd, demo=args.demo, resume=args.resume, playground=True
                )
            except (ConfigError, StartupError) as exc:
                raise RuntimeError(str(exc)) from None
            started.notes[:0] = warnings
            started.warnings[:0] = warnings
            # What the first request, the first answer and the first tool call need but ready
            # did not load, loaded in threads once the window is ready (this runs after it
            # attaches the engine): the tools' argument classes (pydantic), Markdown's modules,
            # and the HTTP client's modules (the model server was asked without them).
            asyncio.get_running_loop().call_soon(_prepare_after_ready, started.on_demo)
            return started
        finally:
            if gc_paused:
                gc.freeze()
                gc.enable()

    return boot


def _prepare_after_ready(on_demo: bool) -> None:
    """Start loading, in threads, what the first exchange needs (see the boot). Even the
    modules that start the loading are imported here, after ready, not on the way to it."""
    from mm_tui.engine.round_trip import prepare as prepare_replies
    from mm_tui.tools import prepare as prepare_tools
    from mm_tui.window.transcript.renderers.answer import prepare as prepare_markdown

    prepare_tools()
    prepare_markdown()
    prepare_replies()
    if not on_demo:
        from mm_tui.engine.provider import prepare

        prepare()


def _prepare_tls(args: argparse.Namespace) -> None:
    """The TLS context of the model-server clients, made in a thread, on the other core
    (`engine/tls.py`); the demo model talks to no server. Line mode starts it while the
    configuration loads; the window once it is loaded, and only when start-up asks through
    httpx (`_asks_over_tls`); else it is made once ready (`provider.prepare`), before the first
    request needs it."""
    if not args.demo:
        from mm_tui.engine.tls import prepare

        prepare()


def _asks_over_tls(settings: Settings) -> bool:
    """Whether start-up asks the model server through httpx, with the TLS context: not for
    detection nor a configured server on this machine over plain http, which are asked without
    httpx (engine/plain_http.py), but for one elsewhere, or to list the models when none is set."""
    from mm_tui.engine.plain_http import plain_local

    base_url = settings.base_url
    return bool(base_url) and not (plain_local(base_url.strip()) and settings.model)


async def _run(args: argparse.Namespace, settings, cwd: Path) -> int:  # noqa: ANN001
    """Line mode, `-p`, and `--ask AGENT "…"` (one /ask exchange printed as in line mode)."""
    from mm_tui.line.one_shot import run_ask_print, run_print
    from mm_tui.line.printer import stdout_console
    from mm_tui.line.repl import run_line
    from mm_tui.startup import StartupError, start

    try:
        # No model server: the demo works in a playground, never in the person's folder (but
        # for --ask, whose own model takes no part: the asked agent works here)
        started = await start(
            settings, cwd, demo=args.demo, resume=args.resume, playground=not args.ask
        )
    except StartupError as exc:
        print(safe_display(str(exc)), file=sys.stderr)
        return 2
    console = stdout_console()
    if args.ask:
        # No notes: this agent's own model (the demo, most often) takes no part in the exchange.
        agent, prompt = args.ask
        return await run_ask_print(started.engine, agent, prompt, console)
    if args.prompt is not None:
        for note in started.notes:
            print(f"mm: {safe_display(note)}", file=sys.stderr)
        return await run_print(started.engine, args.prompt, console)
    return await run_line(started.engine, console, started.notes)


if __name__ == "__main__":
    sys.exit(main())
