"""What the fault tests of tests/faults/ check after each fault: mm is still usable (the next
prompt works) and the session file loads whole. The engine, the real `mm` and the looks at /proc
they use are in the support package.

    with ScriptedServer(Reply(tool_calls=[call("bash", {"command": "ls"})]), "done") as server:
        engine = make_engine(tmp_path, server)
        events = await turn(engine, "go")
        ...
        await next_prompt_works(engine, server)
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from mm_tui.core.events import TurnEnded
from mm_tui.engine.journal import flush_all
from mm_tui.engine.session import Session
from mm_tui.engine.turn import Engine
from support.engine import turn
from support.scripted_server import ScriptedServer
from support.session_helpers import journal_files


async def next_prompt_works(engine: Engine, server: ScriptedServer, text: str = "and now?") -> None:
    """mm is still usable: one more turn goes to the server and ends normally."""
    server.script("still here")
    events = await asyncio.wait_for(turn(engine, text), 20)
    end = events[-1]
    assert isinstance(end, TurnEnded) and end.stop_reason == "end_turn", end
    assert server.requests[-1].messages[-1] == {"role": "user", "content": text}


def session_loads(engine_or_folder: Engine | Path, session_id: str | None = None) -> Session:
    """The session file loads, and every tool call in it has its result."""
    if isinstance(engine_or_folder, Engine):
        folder, session_id = engine_or_folder.session.folder, engine_or_folder.session.id
    else:
        folder = engine_or_folder
    assert session_id is not None
    flush_all()
    loaded = Session.load(folder, session_id)
    assert not loaded.repaired, "the saved history was not well formed"
    return loaded


def session_files(folder: Path) -> list[Path]:
    return journal_files(folder)
