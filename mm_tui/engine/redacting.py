"""The engine's events behind its redactor: the words of an error, a retry, a dead server or a
turn's end can quote what a server answered, and a server that echoes the Authorization header
it was sent (a proxy, a gateway) quotes the key. Every front end's events pass through here
(turns, /ask, /compact, /model, /undo)."""

from __future__ import annotations

from dataclasses import replace

from mm_tui.core.events import EngineError, Event, ModelRetrying, ServerState, TurnEnded
from mm_tui.core.redact import Redactor
from mm_tui.engine.turn_state import Emit


def redacting(redactor: Redactor, emit: Emit) -> Emit:
    """`emit`, each event's words that can quote a server passed through `redactor` first."""
    redact = redactor.text

    def send(event: Event) -> None:
        match event:
            case EngineError():
                event = replace(event, message=redact(event.message))
            case ModelRetrying():
                event = replace(event, reason=redact(event.reason))
            case ServerState() if event.message:
                event = replace(event, message=redact(event.message))
            case TurnEnded() if event.error:
                event = replace(event, error=redact(event.error))
            case _:
                pass
        emit(event)

    return send
