"""The `acp.Client` side of a child's connection: what the child may ask of this mm."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import acp
from acp import schema

if TYPE_CHECKING:
    from mm_tui.acp_client.updates import AskCall


class Relay:
    """The `acp.Client` of every child: hands each session's updates and permission requests to
    the call that opened the session."""

    def __init__(self) -> None:
        self.calls: dict[str, AskCall] = {}

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        call = self.calls.get(session_id)
        if call is not None:
            # an update this side cannot read is skipped; the connection and the call go on
            with contextlib.suppress(Exception):
                call.update(update)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> schema.RequestPermissionResponse:
        call = self.calls.get(session_id)
        if call is None:
            return schema.RequestPermissionResponse(
                outcome=schema.DeniedOutcome(outcome="cancelled")
            )
        return await call.permission(tool_call, options)

    async def write_text_file(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("fs/write_text_file")

    async def read_text_file(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("fs/read_text_file")

    # The child is offered no terminal and no elicitation (the capabilities say so): a request
    # for one is the error it is, never an empty success.

    async def create_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("terminal/create")

    async def terminal_output(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("terminal/output")

    async def release_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("terminal/release")

    async def wait_for_terminal_exit(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("terminal/wait_for_exit")

    async def kill_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("terminal/kill")

    async def create_elicitation(self, *args: Any, **kwargs: Any) -> Any:
        raise acp.RequestError.method_not_found("elicitation/create")

    async def complete_elicitation(self, *args: Any, **kwargs: Any) -> None:
        return None  # a notification: nothing to answer

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise acp.RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None
