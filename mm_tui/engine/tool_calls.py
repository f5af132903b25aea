"""The calls of one model answer, run in order: each parsed (a malformed one answered with the
reason), asked about when the permission rule says so, run, watched by the loop detector,
redacted, and recorded; every call gets a result, so the history stays well formed whatever
happens. It needs no model: give it calls, and it runs them."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from mm_tui.config import Settings
from mm_tui.core.events import (
    Answer,
    PermissionRequested,
    RuleAdded,
    RuleToSave,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
)
from mm_tui.core.frozen import frozen
from mm_tui.core.journal_records import ToolRecord
from mm_tui.core.questions import Questions
from mm_tui.core.redact import Redactor
from mm_tui.core.text import one_line
from mm_tui.engine.context_keeper import ContextKeeper
from mm_tui.engine.guards import LOOP_WARNING, LoopDetector, loop_stop_message
from mm_tui.engine.model_stream import ToolCall
from mm_tui.engine.permission_rules import suggested_pattern
from mm_tui.engine.permissions import Permissions, plan_refusal, rule_refusal, with_reason
from mm_tui.engine.recorder import SessionRecorder
from mm_tui.engine.turn_state import Emit, StopTurn, TurnState
from mm_tui.tools.base import NothingToAsk, Tool, ToolCancelled, ToolContext, ToolResult
from mm_tui.tools.registry import ToolRegistry

NOT_RUN = "[error: not run — the turn was stopped]"


@frozen
class _Outcome:
    status: str
    output: str  # what the model gets
    diff: str | None = None
    display: str | None = None  # what the front ends show instead, when the tool gave it


@frozen
class _Parsed:
    """A call whose arguments parsed: its tool, its arguments (checked, and as a dict) and the
    files it touches."""

    tool: Tool
    args: Any
    arguments: dict[str, Any]
    locations: tuple[str, ...]


@frozen
class _Batch:
    """The calls of one answer: where their events go, the turn's state, their context."""

    emit: Emit
    state: TurnState
    ctx: ToolContext


class ToolCalls:
    def __init__(
        self,
        settings: Settings,
        cwd: Path,
        registry: ToolRegistry,
        recorder: SessionRecorder,
        context: ContextKeeper,
        *,
        redactor: Redactor,
        permissions: Permissions | None = None,
        questions: Questions | None = None,
        loop_detector: LoopDetector | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.cwd = cwd
        self.registry = registry
        self.recorder = recorder
        self.context = context
        self.redactor = redactor
        self.permissions = permissions or Permissions.from_settings(settings)
        self.questions = questions or Questions()
        self.loop_detector = loop_detector or LoopDetector()
        self.clock = clock

    async def run(self, calls: list[ToolCall], emit: Emit, state: TurnState) -> None:
        """Run `calls` in order. Cancelled: the running call is answered as cancelled (the
        turn answers the rest); the loop detector's stop ends the turn (`StopTurn`)."""
        ctx = ToolContext(
            cwd=self.cwd,
            settings=self.settings,
            emit=emit,
            history=state.history,
            questions=self.questions,
        )
        batch = _Batch(emit, state, ctx)
        for call in calls:
            await self._one(call, batch)

    def answer_pending(self, state: TurnState, output: str, emit: Emit) -> None:
        """Give every call of the model's last message a result, so the history stays well
        formed; a call whose line is already shown is closed as cancelled."""
        for call in state.pending:
            title = state.titles.get(call.id)
            tool = ToolRecord(
                status="cancelled", elapsed=0.0, title=title, from_text=call.from_text or None
            )
            self.recorder.tool_result(call.id, output, tool)
            if title is not None:
                emit(
                    ToolCallFinished(
                        call_id=call.id,
                        tool=call.name,
                        status="cancelled",
                        output=output,
                        elapsed=0.0,
                    ),
                )
        state.pending.clear()

    async def _one(self, call: ToolCall, batch: _Batch) -> None:
        started = self.clock()
        if self.permissions.hides(call.name):  # not declared in this mode: the model guessed
            self._unparsable(call, plan_refusal(call.name), started, batch)
            return
        parsed = self.registry.parse(call.name, call.arguments)
        if isinstance(parsed, str):
            self._unparsable(call, parsed, started, batch)
            return
        tool, args = parsed
        arguments = args.model_dump()
        locations = tool.locations(args, batch.ctx)
        batch.state.titles[call.id] = title = tool.heading(args)
        batch.emit(
            ToolCallStarted(
                call_id=call.id,
                tool=tool.name,
                title=title,
                kind=tool.kind_for(args),
                arguments=arguments,
                display=tool.display(args),
                locations=locations,
                from_text=call.from_text,
            ),
        )
        parsed_call = _Parsed(tool, args, arguments, locations)
        refusal = await self._decide(call, parsed_call, batch)
        # the call's time is its run's: the wait for the person's answer is not in it (an
        # `ls` allowed after 6 s took no 6 s), and a rejected call ran for none
        started = self.clock()
        if refusal is not None:
            self._finish(call, _Outcome("rejected", refusal), started, batch)
            batch.state.count(tool.counter)
            return
        batch.emit(ToolCallRunning(call_id=call.id, tool=tool.name))
        result = await self._run(call, tool, args, started, batch)
        if result is not None:
            outcome = _Outcome(result.status, result.output, result.diff, result.display)
            self._conclude(call, _canonical(arguments), outcome, started, batch, tool.counter)

    def _unparsable(self, call: ToolCall, reason: str, started: float, batch: _Batch) -> None:
        """A call whose name or arguments do not parse: shown as the model sent it, answered
        with the reason."""
        short = one_line(call.arguments, 80)
        batch.emit(
            ToolCallStarted(
                call_id=call.id,
                tool=call.name,
                title=f"{call.name}  {short}",
                kind="other",
                arguments={},
                display=f"⚠ {call.name}: {short}",
                from_text=call.from_text,
            ),
        )
        batch.state.titles[call.id] = f"{call.name}  {short}"
        self._conclude(call, call.arguments, _Outcome("error", reason), started, batch, None)

    async def _decide(self, call: ToolCall, parsed: _Parsed, batch: _Batch) -> str | None:
        """What the model hears when the call does not run (a deny rule, the person's refusal),
        or None when it runs: by the rules, the mode and the session's answers, else the
        person's answer."""
        permissions, tool = self.permissions, parsed.tool
        verdict = None
        if permissions.rules:
            verdict = permissions.rules.check(
                tool.name, parsed.arguments, paths=parsed.locations, root=self.cwd
            )
            if verdict is not None and verdict.action == "deny":
                return rule_refusal(tool.rejection(), tool.name, verdict)
        wants = tool.needs_permission(parsed.args)
        decision = permissions.without_asking(tool.name, wants, verdict)
        if decision is not None:
            return None if decision.allows else tool.rejection()
        answer = await self._ask(call, parsed, batch)
        if answer is None:  # nothing to ask: the call fails by itself
            return None
        permissions.record(tool.name, answer.decision)
        if answer.rule is not None and answer.decision.allows:
            await self._add_rule(answer.rule, batch.emit)
        if answer.decision.allows:
            return None
        return with_reason(tool.rejection(), answer.reason)

    async def _add_rule(self, rule: RuleToSave, emit: Emit) -> None:
        """The person's rule holds from now on, and is written where they chose (in a thread:
        the file and the trust record are written to disk)."""
        self.permissions.rules.add(rule.tool, rule.pattern, "allow")
        from mm_tui.config.rule_file import save_allow_rule

        path, warning = await asyncio.to_thread(save_allow_rule, rule, cwd=self.cwd)
        emit(
            RuleAdded(
                tool=rule.tool, pattern=rule.pattern, place=rule.place, path=path, warning=warning
            )
        )

    async def _ask(self, call: ToolCall, parsed: _Parsed, batch: _Batch) -> Answer | None:
        """The person's answer, or None when there is nothing to ask (`NothingToAsk`)."""
        tool, args = parsed.tool, parsed.args
        try:
            details = await tool.permission_details(args, batch.ctx)
        except NothingToAsk:
            return None
        future = self.questions.ask(None, call.id)
        pattern = suggested_pattern(tool.name, parsed.arguments, parsed.locations, self.cwd)
        batch.emit(
            PermissionRequested(
                call_id=call.id,
                tool=tool.name,
                title=tool.heading(args),
                details=details,
                pattern=pattern,
            ),
        )
        try:
            return await future
        finally:
            self.questions.withdraw(None, call.id)

    async def _run(
        self, call: ToolCall, tool: Tool, args: Any, started: float, batch: _Batch
    ) -> ToolResult | None:
        """The tool's result; None when the call was answered here (it raised)."""
        try:
            return await tool.run(args, replace(batch.ctx, call_id=call.id))
        except ToolCancelled as cancelled:
            batch.state.count(tool.counter)  # a bash response all the same, as a rejected one is
            outcome = _Outcome("cancelled", cancelled.output, display=cancelled.display)
            self._finish(call, outcome, started, batch)
            raise asyncio.CancelledError from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a tool must not raise; if one does, the model hears it
            output = f"[error: {tool.name} failed unexpectedly: {type(exc).__name__}: {exc}]"
            self._finish(call, _Outcome("error", output), started, batch)
            batch.state.count(tool.counter)
            return None

    def _conclude(
        self,
        call: ToolCall,
        arguments: str,
        outcome: _Outcome,
        started: float,
        batch: _Batch,
        counter: str | None,
    ) -> None:
        """Record a call in the loop detector, then give the model its result."""
        batch.state.count(counter)
        verdict = self.loop_detector.record(call.name, arguments, outcome.output)
        if verdict.stop:
            message = loop_stop_message(call.name)
            self._finish(call, _Outcome("error", message, outcome.diff), started, batch)
            self.answer_pending(batch.state, NOT_RUN, batch.emit)
            raise StopTurn("loop_detected", message, "generation")
        if verdict.warn:
            output = outcome.output
            output = f"{output.rstrip(chr(10))}\n{LOOP_WARNING}" if output else LOOP_WARNING
            display = outcome.display
            if display is not None:
                display = f"{display}\n{LOOP_WARNING}"
            outcome = replace(outcome, output=output, display=display)
        self._finish(call, outcome, started, batch)

    def _finish(self, call: ToolCall, outcome: _Outcome, started: float, batch: _Batch) -> None:
        """The model gets the output; the front ends see the display when the tool gave one.
        A tool may print the api key (`echo $MM_API_KEY`): neither history nor screen get it."""
        text = self.redactor.text
        output = text(outcome.output)
        display = outcome.display and text(outcome.display)
        diff = outcome.diff and text(outcome.diff)
        elapsed = self.clock() - started
        state = batch.state
        tool = ToolRecord(
            status=outcome.status,
            elapsed=round(elapsed, 3),
            title=state.titles.get(call.id),
            display=display,
            diff=diff,
            from_text=call.from_text or None,
        )
        self.recorder.tool_result(call.id, output, tool)
        self.context.fair_share(call.name, batch.emit)
        state.pending = [c for c in state.pending if c.id != call.id]
        self.recorder.save(batch.emit)
        batch.emit(
            ToolCallFinished(
                call_id=call.id,
                tool=call.name,
                status=outcome.status,  # type: ignore[arg-type]
                output=output if display is None else display,
                elapsed=elapsed,
                diff=diff,
            ),
        )


def _canonical(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False)
