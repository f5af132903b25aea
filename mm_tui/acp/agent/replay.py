"""`session/load` replays the whole conversation from the journal's records (what a compaction
replaced too: the editor showed it before), each answer's reasoning as thought, each tool call with the status, title and output its
result record kept; a call with no result (mm was killed) comes as failed, `cancelled` in `_meta`.
"""

from __future__ import annotations

from typing import Any

import acp
from acp.schema import ToolCallLocation, ToolCallStart

from mm_tui.acp import meta
from mm_tui.acp.agent.acp_session import AcpSession
from mm_tui.acp.agent.content import (
    acp_kind,
    diff_contents,
    message_chunk,
    single_path,
    text_content,
    thought_chunk,
)
from mm_tui.config import Settings
from mm_tui.engine.session import INTERRUPTED


async def replay(state: AcpSession, settings: Settings) -> None:
    """The conversation as updates, from the journal's records: user and agent messages (an
    answer's reasoning first, as thought), and each tool call as it ended (the status its result record kept, never guessed from
    the text). What a compaction replaced is replayed too: the editor showed it before."""
    records = state.engine.session.records
    results = _results(records)
    for number, record in enumerate(records):
        if record.get("type") != "message":
            continue
        message = record["message"]
        role = message.get("role")
        if role == "user":
            text = _flat(message.get("content"))
            if text:
                await state.send(acp.update_user_message_text(text))
        elif role == "assistant":
            thought = record.get("thought")
            if isinstance(thought, str) and thought:
                await state.send(thought_chunk(thought, None))
            text = _flat(message.get("content"))
            if text:
                await state.send(message_chunk(text, None))
            for index, call in enumerate(message.get("tool_calls") or []):
                if isinstance(call, dict):
                    result = results.get((number, index))
                    await _replay_call(state, settings, call, result)


async def _replay_call(
    state: AcpSession,
    settings: Settings,
    call: dict[str, Any],
    result: dict[str, Any] | None,
) -> None:
    """One finished call; `result` is its result's record, None when mm was killed first."""
    function = call.get("function") or {}
    name = str(function.get("name", ""))
    raw = str(function.get("arguments") or "")
    title, kind, locations, arguments = f"{name}  {raw}", "other", (), {}
    parsed = state.engine.registry.parse(name, raw)
    if not isinstance(parsed, str):
        from mm_tui.tools.base import ToolContext

        tool, args = parsed
        ctx = ToolContext(cwd=state.engine.cwd, settings=settings)
        title, kind = tool.heading(args), tool.kind_for(args)
        locations, arguments = tool.locations(args, ctx), args.model_dump()
    status, output, diff, elapsed = "cancelled", INTERRUPTED, None, 0.0
    if result is not None:
        content = _flat(result["message"].get("content"))
        kept = result.get("tool")
        kept = kept if isinstance(kept, dict) else {}
        status = kept.get("status")
        if status not in ("ok", "error", "rejected", "cancelled"):
            # No status: the answer mm gave, on loading, to a call a kill left without one.
            status = "cancelled" if content == INTERRUPTED else "ok"
        display = kept.get("display")
        output = display if isinstance(display, str) else content
        diff = kept.get("diff") if isinstance(kept.get("diff"), str) else None
        if isinstance(kept.get("elapsed"), int | float):
            elapsed = float(kept["elapsed"])
        if isinstance(kept.get("title"), str) and kept["title"]:
            title = kept["title"]
    content_out: list[Any] = []
    if diff:
        content_out.extend(diff_contents(diff, single_path(tuple(locations)), state.engine.cwd))
    if output:
        content_out.append(text_content(output))
    acp_id = state.acp_id(None, str(call.get("id")), new=True)
    await state.send(
        ToolCallStart(
            session_update="tool_call",
            tool_call_id=acp_id,
            title=title,
            kind=acp_kind(kind),  # type: ignore[arg-type]
            status="completed" if status == "ok" else "failed",
            locations=[ToolCallLocation(path=p) for p in locations] or None,
            raw_input=arguments or None,
            content=content_out or None,
            field_meta=meta.put(tool=name, status=status, elapsed=round(elapsed, 3)),
        ),
    )


def _results(records: list[dict[str, Any]]) -> dict[tuple[int, int], dict[str, Any]]:
    """Each tool call's result record, by (the record of the call, the call's place in it): a
    call id alone is not enough, since small servers count their ids from 0 at each answer."""
    waiting: dict[str, tuple[int, int]] = {}
    found: dict[tuple[int, int], dict[str, Any]] = {}
    for number, record in enumerate(records):
        if record.get("type") != "message":
            continue
        message = record["message"]
        if message.get("role") == "assistant":
            for index, call in enumerate(message.get("tool_calls") or []):
                if isinstance(call, dict):
                    waiting[str(call.get("id"))] = (number, index)
        elif message.get("role") == "tool":
            where = waiting.pop(str(message.get("tool_call_id")), None)
            if where is not None:
                found[where] = record
    return found


def _flat(content: Any) -> str:
    """A history message's content as text: a string, or the text of its content parts."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""
