"""`mm -p` and `mm --ask`: one turn or one /ask exchange printed as line mode prints it, every
call that would ask rejected (nobody is there to answer), and an exit status that says how it
ended."""

from __future__ import annotations

import sys
from collections.abc import Callable

from rich.console import Console
from rich.text import Text

from mm_tui.core.events import (
    Decision,
    EngineError,
    Event,
    PermissionRequested,
    TurnEnded,
)
from mm_tui.core.terminal_text import safe_display
from mm_tui.engine.turn import Engine
from mm_tui.line.printer import LinePrinter, permission_title


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
