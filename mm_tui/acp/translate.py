"""The engine's events of a turn, as ACP session updates and permission requests:

| engine event | ACP |
|---|---|
| `TextDelta`, `ThoughtDelta` | `agent_message_chunk`, `agent_thought_chunk` |
| `ToolCallStarted` | `tool_call` (pending; kind, title, absolute locations, raw input) |
| `ToolCallRunning` | `tool_call_update` in_progress |
| `PermissionRequested` | `session/request_permission`, four options, ids `a` `s` `r` `n` (the `Decision` values) |
| `ToolCallFinished` | `tool_call_update` completed (ok) or failed (error, rejected, cancelled): the output as text, a file change as diff content |
| `EngineError` | an `agent_message_chunk` with the message, so an editor shows it; also logged |
| `ContextUsage` | `usage_update`: `used` tokens of the window's `size` (sent when the window is known); `_meta["mm"]["fixed"]`: the system prompt's and the tools' part of them |
| `HistoryShortened`, `HistoryCompacted`, `ModelRetrying`, `ServerState`, `ServerFinishing` | nothing but a line in the log: ACP has no notice (see below) |
| `ToolProgress` | nothing: a spinner, which is the client's |
| `TurnEnded` | the prompt's stop reason (see `STOP_REASONS` in `mm_agent.py`) |

Shortened outputs and a compaction have no update of their own: ACP's session updates are the
conversation (user, agent and thought chunks, tool calls), plans, modes, commands, config
options, session info and usage, and none of them is a notice. Sent as agent text they would
become part of the answer an editor keeps (and a parent mm hands to its model); as a thought,
the model's reasoning, which it is not; as a tool call, a call the model never made. What an
editor can see of them is the `usage_update` that follows each (the context's fill drops); the
log says what happened. The model's window is learned once per process, from the server (or
`contextWindow`), for the first session, and given to every later one.

`in_progress`: sent when the engine says the call runs (`ToolCallRunning`), after any question;
an asked agent's call (its events come through the ACP client) is in progress at once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, assert_never

from acp.schema import (
    AgentPlanUpdate,
    AllowedOutcome,
    CurrentModeUpdate,
    PermissionOption,
    PlanEntry,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
)

from mm_tui.acp.acp_session import AcpSession
from mm_tui.acp.content import (
    acp_kind,
    diff_contents,
    message_chunk,
    single_path,
    text_content,
    thought_chunk,
)
from mm_tui.core import acp_meta as meta
from mm_tui.core.events import (
    AgentFinished,
    AgentStarted,
    Answer,
    ComposingToolCall,
    ContextUsage,
    Decision,
    EngineError,
    Event,
    FilesRestored,
    HistoryCompacted,
    HistoryShortened,
    ModeChanged,
    ModelChanged,
    ModelProbed,
    ModelRetrying,
    PermissionRequested,
    RuleAdded,
    RuleToSave,
    ServerFinishing,
    ServerState,
    TextDelta,
    Thinking,
    ThoughtDelta,
    TodoUpdated,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    ToolProgress,
    TurnEnded,
    TurnStarted,
)
from mm_tui.core.text import agent_title

log = logging.getLogger("mm.acp")

_OPTION_NAMES = {
    Decision.ALLOW_ONCE: "Allow once",
    Decision.ALLOW_SESSION: "Allow this tool for the session",
    Decision.REJECT: "Reject this call",
    Decision.NEVER: "Never this tool this session",
}
PERMISSION_OPTIONS = [
    PermissionOption(option_id=decision.value, name=name, kind=meta.OPTION_KINDS[decision])
    for decision, name in _OPTION_NAMES.items()
]
"""The four decisions of every front end, one option each; the option id is the Decision's
letter, so an answer maps back without a table."""
RULE_OPTION = "p"


def permission_options(event: PermissionRequested) -> list[PermissionOption]:
    """The four, and when the engine offers a rule for calls like this one, a fifth that keeps
    it in the project's config (`p`, as the window's box; an `allow_always` to the client)."""
    if not event.pattern or event.agent is not None:
        return PERMISSION_OPTIONS
    name = f'Always allow "{event.pattern}" in this project'
    return [
        *PERMISSION_OPTIONS[:2],
        PermissionOption(option_id=RULE_OPTION, name=name, kind="allow_always"),
        *PERMISSION_OPTIONS[2:],
    ]


async def send_events(state: AcpSession, queue: asyncio.Queue[Event | None]) -> None:
    """Translate the turn's events, in order. A failure to send one is logged and the
    next goes on: the engine may be waiting on a permission question further down, which a
    failure to send rejects."""
    while (event := await queue.get()) is not None:
        try:
            await translate(state, event)
        except Exception:
            log.exception("cannot send %s", type(event).__name__)
            if isinstance(event, PermissionRequested):
                state.engine.answer(event.agent, event.call_id, Decision.REJECT)


async def translate(state: AcpSession, event: Event) -> None:
    child = event.agent is not None
    mine = meta.put(agent=event.agent) if child else None
    match event:
        case TextDelta():
            if event.text:
                state.text_sent = True
                await state.send(message_chunk(event.text, mine))
        case ThoughtDelta():
            if event.text:
                await state.send(thought_chunk(event.text, mine))
        case ToolCallStarted():
            await _tool_started(state, event)
        case ToolCallRunning():
            acp_id = state.acp_id(event.agent, event.call_id)
            await state.send(_progress(acp_id, "in_progress"))
        case PermissionRequested():
            await _request_permission(state, event)
        case ToolCallFinished():
            await _tool_finished(state, event)
        case EngineError():
            log.warning("%s error: %s", event.where, event.message)
            text = f"\n\n{event.message}\n" if state.text_sent else f"{event.message}\n"
            state.text_sent = True
            await state.send(message_chunk(text, mine))
        case ContextUsage():
            if not child and event.window:  # an asked agent's context is not this session's
                await state.send(
                    UsageUpdate(
                        session_update="usage_update",
                        used=event.used,
                        size=event.window,
                        field_meta=meta.put(fixed=event.fixed) if event.fixed else None,
                    ),
                )
        case HistoryShortened():
            log.info("%s", event.message)
        case HistoryCompacted():
            log.info("%s", event.title)
        case ModelChanged() | FilesRestored() | RuleAdded() | ModelProbed():
            log.info("%s", event.text)
        case TodoUpdated():
            if not child:
                await state.send(plan_update(event))
        case ModeChanged():
            if not child:
                await state.send(
                    CurrentModeUpdate(
                        session_update="current_mode_update", current_mode_id=event.mode
                    )
                )
        case ModelRetrying() | ServerFinishing():
            log.info("%s", event.text)
        case ServerState():
            if not event.answering:
                log.warning("the model server does not answer: %s", event.message)
        case (
            TurnStarted()
            | Thinking()
            | ComposingToolCall()
            | ToolProgress()
            | AgentStarted()
            | AgentFinished()
            | TurnEnded()
        ):
            pass  # no ACP counterpart: spinners are the client's; TurnEnded is the answer
        case _:
            assert_never(event)


async def _tool_started(state: AcpSession, event: ToolCallStarted) -> None:
    acp_id = state.acp_id(event.agent, event.call_id, new=True)
    state.locations[acp_id] = event.locations
    extra: dict[str, Any] = {"tool": event.tool}
    if event.agent:
        extra["agent"] = event.agent
    if event.from_text:
        extra["from_text"] = True
    await state.send(
        ToolCallStart(
            session_update="tool_call",
            tool_call_id=acp_id,
            title=agent_title(event.agent, event.title),
            kind=acp_kind(event.kind),  # type: ignore[arg-type]
            status="pending",
            locations=[ToolCallLocation(path=p) for p in event.locations] or None,
            raw_input=event.arguments,
            field_meta=meta.put(**extra),
        ),
    )
    if event.agent is not None:  # an asked agent's call: it runs in the child, now
        await state.send(_progress(acp_id, "in_progress"))


async def _request_permission(state: AcpSession, event: PermissionRequested) -> None:
    """Ask the client and give its answer to the engine. A question withdrawn meanwhile (a
    cancelled turn) drops the request; an answer that cannot be had rejects."""
    questions = state.engine.questions
    if not questions.waiting(event.agent, event.call_id):
        return
    acp_id = state.acp_id(event.agent, event.call_id)
    path = single_path(state.locations.get(acp_id, ()))
    diffs = diff_contents(event.details, path, state.engine.cwd)
    content: list[Any] = (diffs or [text_content(event.details)]) if event.details else []
    request = asyncio.ensure_future(
        state.conn.request_permission(
            session_id=state.id,
            tool_call=ToolCallUpdate(
                tool_call_id=acp_id,
                title=agent_title(event.agent, event.title),
                status="pending",
                content=content or None,
            ),
            options=permission_options(event),
        )
    )
    settled = asyncio.ensure_future(questions.settled(event.agent, event.call_id))
    done, _ = await asyncio.wait({request, settled}, return_when=asyncio.FIRST_COMPLETED)
    settled.cancel()
    if request not in done:
        request.cancel()
        return
    try:
        answer = request.result()
    except Exception as exc:  # noqa: BLE001 - a failed request is a refusal
        log.warning("permission request failed (%s): the call is rejected", exc)
        decision = Decision.REJECT
    else:
        decision = _decision(answer.outcome, event)
    state.engine.answer(event.agent, event.call_id, decision)  # allowed: ToolCallRunning next


async def _tool_finished(state: AcpSession, event: ToolCallFinished) -> None:
    acp_id = state.acp_id(event.agent, event.call_id)
    content: list[Any] = []
    if event.diff:
        path = single_path(state.locations.get(acp_id, ()))
        content.extend(diff_contents(event.diff, path, state.engine.cwd))
    if event.output:
        content.append(text_content(event.output))
    await state.send(
        ToolCallProgress(
            session_update="tool_call_update",
            tool_call_id=acp_id,
            status="completed" if event.status == "ok" else "failed",
            content=content or None,
            field_meta=meta.put(status=event.status, elapsed=round(event.elapsed, 3)),
        ),
    )


def _decision(outcome: Any, event: PermissionRequested) -> Decision | Answer:
    """A selected option, by its id (the Decision's letter, or the rule's); a cancelled
    request, or an id that is none of ours, rejects."""
    if not isinstance(outcome, AllowedOutcome):
        return Decision.REJECT
    if outcome.option_id == RULE_OPTION and event.pattern:
        rule = RuleToSave(tool=event.tool, pattern=event.pattern, place="project")
        return Answer(Decision.ALLOW_ONCE, rule=rule)
    try:
        return Decision(outcome.option_id)
    except ValueError:
        log.warning("unknown permission option %r: the call is rejected", outcome.option_id)
        return Decision.REJECT


def _progress(acp_id: str, status: str) -> ToolCallProgress:
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=acp_id,
        status=status,  # type: ignore[arg-type]
    )


PLAN_STATUS = {"pending": "pending", "in_progress": "in_progress", "done": "completed"}


def plan_update(event: TodoUpdated) -> AgentPlanUpdate:
    """The model's task list as ACP's plan: the whole list each time, as the protocol sends it."""
    return AgentPlanUpdate(
        session_update="plan",
        entries=[
            PlanEntry(content=step.step, priority="medium", status=PLAN_STATUS[step.state])  # type: ignore[arg-type]
            for step in event.steps
        ],
    )
