"""`session/load` replays the whole conversation from the journal (read by `core.conversation`;
what a compaction replaced too: the editor showed it before): each answer's reasoning as
thought, then its text, then each tool call with the status, title and output its result
record kept; a call with no result (mm was killed) comes as failed, `cancelled` in `_meta`.
"""

from __future__ import annotations

from typing import Any

import acp
from acp.schema import ToolCallLocation, ToolCallStart

from mm_tui.acp.acp_session import AcpSession
from mm_tui.acp.content import (
    acp_kind,
    diff_contents,
    message_chunk,
    single_path,
    text_content,
    thought_chunk,
)
from mm_tui.config import Settings
from mm_tui.core import acp_meta as meta
from mm_tui.core.conversation import AgentSaid, Call, UserSaid, read_conversation


async def replay(state: AcpSession, settings: Settings) -> None:
    """The conversation as updates: user and agent messages (an answer's reasoning first, as
    thought), and each tool call as it ended (the status its result record kept, never
    guessed from the text)."""
    for entry in read_conversation(state.engine.session.records):
        if isinstance(entry, UserSaid):
            if entry.text:
                await state.send(acp.update_user_message_text(entry.text))
        elif isinstance(entry, AgentSaid):
            if entry.thought:
                await state.send(thought_chunk(entry.thought, None))
            if entry.text:
                await state.send(message_chunk(entry.text, None))
            for call in entry.calls:
                await _replay_call(state, settings, call)


async def _replay_call(state: AcpSession, settings: Settings, call: Call) -> None:
    """One finished call, as its result says it ended."""
    name, raw = call.name, call.arguments
    title, kind, locations, arguments = f"{name}  {raw}", "other", (), {}
    parsed = state.engine.registry.parse(name, raw)
    if not isinstance(parsed, str):
        from mm_tui.tools.base import ToolContext

        tool, args = parsed
        ctx = ToolContext(cwd=state.engine.cwd, settings=settings)
        title, kind = tool.heading(args), tool.kind_for(args)
        locations, arguments = tool.locations(args, ctx), args.model_dump()
    result = call.result
    content: list[Any] = []
    if result.diff:
        path = single_path(tuple(locations))
        content.extend(diff_contents(result.diff, path, state.engine.cwd))
    if result.shown:
        content.append(text_content(result.shown))
    acp_id = state.acp_id(None, call.call_id, new=True)
    await state.send(
        ToolCallStart(
            session_update="tool_call",
            tool_call_id=acp_id,
            title=result.title or title,
            kind=acp_kind(kind),  # type: ignore[arg-type]
            status="completed" if result.status == "ok" else "failed",
            locations=[ToolCallLocation(path=p) for p in locations] or None,
            raw_input=arguments or None,
            content=content or None,
            field_meta=meta.put(
                tool=name, status=result.status, elapsed=round(result.elapsed or 0.0, 3)
            ),
        ),
    )
