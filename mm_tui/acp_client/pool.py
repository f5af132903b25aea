"""The asked agents of one mm, and one call to one of them from start to end.

Faults and what follows (the call's text is what the child answered until then):

- the child cannot start or answer `initialize`/`session/new`: `failed: <reason>`;
- it exits, closes its output or prints garbage during the prompt: `stopped before finishing`;
- it is silent for `watchdogTimeout` seconds (a permission waiting for the person does not
  count): stopped, and the process is killed;
- the call is cancelled: `session/cancel`, a few seconds for the child to wind down (else it is
  killed), then `stopped before finishing: cancelled`.

A child that broke is stopped and forgotten; the next call starts a fresh one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
import yaml

from mm_tui.acp_client.child import Child
from mm_tui.acp_client.updates import AskCall, Emit
from mm_tui.acp_client.wording import failed, no_answer, request_error, stop_error, stopped
from mm_tui.config import ENV_NAMES
from mm_tui.core.asking import DEPTH_VAR, AgentEntry, Asked, current_depth
from mm_tui.core.events import AgentFinished, AgentStarted
from mm_tui.core.questions import Questions

CANCEL_GRACE = 5.0  # seconds a cancelled child has to answer its prompt before it is killed


def agent_file_settings(path: Path) -> dict[str, Any]:
    """The keys an agent file sets, read directly (no other layer merged in); empty when it
    cannot be read — starting the child then says what is wrong with it."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


@dataclass
class AgentPool:
    """The asked agents of one mm: a child per agent, started on first call, reused, stopped
    when mm exits (`aclose`). `command` replaces `python -m mm_tui.cli` (tests point it at a
    wrapper around the real program).

    Pools are shared within a process (`acquire`, `release`): `mm -acp` builds an engine, and
    so an ask_agent tool, per ACP session, and a parent opens a session per call; without
    sharing, each call to a child would start a new grandchild and keep it until the child
    exits. The last `release` stops the children."""

    entries: Mapping[str, AgentEntry]
    command: Sequence[str] | None = None
    children: dict[str, Child] = field(default_factory=dict)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    _users: int = 0
    _key: tuple[Any, ...] = ()

    @classmethod
    def acquire(
        cls, entries: Mapping[str, AgentEntry], command: Sequence[str] | None = None
    ) -> AgentPool:
        """The process's pool for these agents (the same files, yolo, command), made when
        there is none; `release` it when done."""
        key = (
            tuple(sorted((e.name, str(e.config), e.yolo) for e in entries.values())),
            tuple(command or ()),
            id(asyncio.get_running_loop()),
        )
        pool = _POOLS.get(key)
        if pool is None:
            pool = _POOLS[key] = cls(dict(entries), list(command) if command else None)
            pool._key = key
        pool._users += 1
        return pool

    async def release(self) -> None:
        """One user less; the last one stops the children."""
        self._users -= 1
        if self._users <= 0:
            _POOLS.pop(self._key, None)
            await self.aclose()

    def child_command(self, entry: AgentEntry, yolo: bool) -> list[str]:
        base = list(self.command) if self.command else [sys.executable, "-m", "mm_tui.cli"]
        return [*base, "-acp", "--config", str(entry.config), "--yolo" if yolo else "--no-yolo"]

    def child_env(self, entry: AgentEntry) -> dict[str, str]:
        """This process's environment, one level deeper; the MM_ variables of the keys the
        agent file sets are left out, so that the agent file, not this shell, defines the agent.
        Not `core.command_env`: the child is mm itself, which needs the key (MM_API_KEY,
        OPENAI_API_KEY) to reach its model; its own bash commands get the keys taken away."""
        env = dict(os.environ)
        env[DEPTH_VAR] = str(current_depth() + 1)
        own = set(agent_file_settings(entry.config))
        for var, key in ENV_NAMES.items():
            if key in own:
                env.pop(var, None)
        if "apiKey" in own:
            env.pop("OPENAI_API_KEY", None)
        return env

    async def ask(
        self,
        name: str,
        text: str,
        *,
        shown_prompt: str,
        cwd: Path,
        emit: Emit,
        questions: Questions,
        asked_by: str,
        yolo: bool,
        watchdog: float,
    ) -> Asked:
        """One call: `text` to agent `name` in a fresh session in `cwd`. Never raises for the
        child's faults (they are in `Asked.error`); returns with `cancelled` when the caller
        was cancelled, after the child was told."""
        call = AskCall(name, emit, questions, yolo, cwd, watchdog)
        async with self._locks.setdefault(name, asyncio.Lock()):
            return await self._ask(call, text, shown_prompt, asked_by)

    async def _child(self, entry: AgentEntry, cwd: Path, yolo: bool) -> tuple[Child, bool]:
        """The agent's child, started when there is none fit for use; True when reused."""
        child = self.children.get(entry.name)
        if child is not None and child.usable and child.yolo == yolo and child.cwd == cwd:
            return child, True
        if child is not None:
            await self.discard(entry.name)
        child = Child(
            entry.name,
            self.child_command(entry, yolo),
            env=self.child_env(entry),
            cwd=cwd,
            yolo=yolo,
        )
        self.children[entry.name] = child
        await child.start()
        return child, False

    async def _open_session(self, entry: AgentEntry, cwd: Path, yolo: bool) -> tuple[Child, str]:
        child, reused = await self._child(entry, cwd, yolo)
        try:
            session = await child.conn.new_session(cwd=str(cwd), mcp_servers=[])
        except (ConnectionError, OSError):
            if not reused:
                raise
            # it died since the last call and nobody noticed yet: once more, with a fresh one
            await self.discard(entry.name)
            child, _ = await self._child(entry, cwd, yolo)
            session = await child.conn.new_session(cwd=str(cwd), mcp_servers=[])
        child._learn(session.field_meta)
        return child, session.session_id

    async def _ask(self, call: AskCall, text: str, shown_prompt: str, asked_by: str) -> Asked:
        """`ask`, once the agent's lock is held; `call` carries the agent's name, the events'
        way out, yolo, the working folder and the watchdog's timeout."""
        name = call.name
        entry = self.entries[name]
        asked = Asked(name=name)
        child: Child | None = None
        session_id: str | None = None
        prompt_task: asyncio.Task[Any] | None = None
        started: AgentStarted | None = None
        try:
            try:
                async with asyncio.timeout(call.timeout) as timer:
                    call.watchdog = timer
                    child, session_id = await self._open_session(entry, call.cwd, call.yolo)
                    child.relay.calls[session_id] = call
                    info = child.info
                    started = AgentStarted(
                        name=name,
                        title=info.title,
                        model=info.model,
                        provider=info.provider,
                        asked_by=asked_by,
                        prompt=shown_prompt,
                        agent=name,
                    )
                    call.emit(started)
                    prompt_task = asyncio.create_task(
                        child.conn.prompt(session_id=session_id, prompt=[acp.text_block(text)])
                    )
                    prompt_task.add_done_callback(_retrieved)
                    response = await asyncio.shield(prompt_task)
            finally:
                call.watchdog = None
        except TimeoutError:
            if prompt_task is None:
                asked.error = failed(
                    name, f"it did not answer within {call.timeout:g}s of starting"
                )
            else:
                asked.error = stopped(
                    name,
                    f"it sent nothing for {call.timeout:g}s — stopped by the watchdog; raise "
                    "watchdogTimeout if its model is slow to answer",
                )
            await self.discard(name)
        except asyncio.CancelledError:
            asked.cancelled = True
            asked.error = stopped(name, "cancelled")
            await asyncio.shield(self._wind_down(name, child, session_id, prompt_task, call))
        except acp.RequestError as exc:
            reason = request_error(exc)
            if prompt_task is None:  # refused to start a session: do not keep it
                asked.error = failed(name, reason)
                await self.discard(name)
            else:
                asked.error = stopped(name, reason)
        except Exception as exc:  # noqa: BLE001 - whatever broke, the call says it and ends
            child = self.children.get(name, child)
            if child is None or child.process is None:
                reason = f"it could not be started: {exc}"
            elif isinstance(exc, ConnectionError | OSError):
                reason = await child.broken_reason()
            else:  # the child said something this side cannot understand
                reason = f"{type(exc).__name__}: {exc}"
            asked.error = failed(name, reason) if prompt_task is None else stopped(name, reason)
            await self.discard(name)
        else:
            asked.error = stop_error(name, response.stop_reason)
        finally:
            call.withdraw()
            if child is not None and session_id is not None:
                child.relay.calls.pop(session_id, None)
            call.close_tools()
            if started is not None:
                call.emit(
                    AgentFinished(
                        name=name,
                        title=started.title,
                        model=started.model,
                        provider=started.provider,
                        asked_by=asked_by,
                        agent=name,
                    )
                )
            if prompt_task is not None and not prompt_task.done():
                prompt_task.cancel()
        asked.answer = "".join(call.answer)
        if asked.error is None and not asked.answer.strip():
            asked.error = no_answer(name)
        return asked

    async def _wind_down(
        self,
        name: str,
        child: Child | None,
        session_id: str | None,
        prompt_task: asyncio.Task[Any] | None,
        call: AskCall,
    ) -> None:
        """The caller was cancelled: tell the child (`session/cancel`) and give it a few
        seconds to end its prompt, so that it stays usable; a child that does not is stopped."""
        call.withdraw()
        if child is None or session_id is None or prompt_task is None:
            # cancelled while the child started or opened the session: in what state it is
            # nobody knows, so the next call starts afresh
            await self.discard(name)
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(child.conn.cancel(session_id=session_id), 1.0)
        done, _ = await asyncio.wait({prompt_task}, timeout=CANCEL_GRACE)
        if not done:
            await self.discard(name)

    async def discard(self, name: str) -> None:
        """Stop a child and forget it; the next call starts a fresh one."""
        child = self.children.pop(name, None)
        if child is not None:
            await child.aclose()

    async def aclose(self) -> None:
        """mm exits: every child stops."""
        names = list(self.children)
        await asyncio.gather(*(self.discard(n) for n in names), return_exceptions=True)


_POOLS: dict[tuple[Any, ...], AgentPool] = {}


def _retrieved(task: asyncio.Task[Any]) -> None:
    """A prompt abandoned with its child (killed, broken) ends in an error nobody awaits."""
    if not task.cancelled():
        task.exception()
