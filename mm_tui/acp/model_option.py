"""The session's model as an ACP configuration option (`configOptions`, category "model"): the
models the server offers, the one in use selected; `session/set_config_option` switches, as
`/model NAME` does in the window (engine/model_choice.py).

Every ACP session shares one model client, so a session that switches first gets a client of its
own (`OpenAIProvider.sibling`): the others go on with the model they had. The server's list is
asked once per agent (one GET /models; a session/new must not wait on it twice) and kept."""

from __future__ import annotations

import logging
from typing import Any

import acp
from acp.schema import SessionConfigOptionSelect, SessionConfigSelectOption

from mm_tui.acp.acp_session import AcpSession
from mm_tui.acp.translate import translate
from mm_tui.core.events import Event
from mm_tui.engine.model_choice import choose_model, offered_ids
from mm_tui.engine.model_stream import ModelError

log = logging.getLogger("mm.acp")

MODEL_OPTION = "model"
LIST_TIMEOUT = 3.0  # seconds: the server's list, asked when the first session opens


class ModelOption:
    """The option of every session of one agent, and the server's list it offers."""

    def __init__(self) -> None:
        self._ids: list[str] | None = None  # the server's models, once listed

    async def option(self, state: AcpSession) -> SessionConfigOptionSelect:
        """The option as session/new, session/load and set_config_option answer it."""
        current = state.engine.client.model
        ids = await self._offered(state)
        if current not in ids:
            ids = [current, *ids]
        return SessionConfigOptionSelect(
            id=MODEL_OPTION,
            name="Model",
            description="The model the requests go to; the conversation stays when it changes.",
            category="model",
            type="select",
            current_value=current,
            options=[SessionConfigSelectOption(value=model, name=model) for model in ids],
        )

    async def _offered(self, state: AcpSession) -> list[str]:
        if self._ids is None:
            try:
                self._ids = await offered_ids(state.engine.client, timeout=LIST_TIMEOUT)
            except ModelError as exc:
                log.info("the server's models cannot be listed: %s", exc)
                return []
        return list(self._ids)

    async def switch(self, state: AcpSession, config_id: str, value: Any, shared: Any) -> None:
        """`session/set_config_option` on the model: switched, or the request's error. While it
        switches (a compaction may run), the session takes no prompt."""
        if config_id != MODEL_OPTION or not isinstance(value, str):
            raise acp.RequestError.invalid_params(
                {"message": f"no configuration option {config_id!r} here: mm has {MODEL_OPTION!r}"}
            )
        if state.prompting:
            raise acp.RequestError.invalid_request(
                {"message": "a prompt is running in this session; cancel it first"}
            )
        engine = state.engine
        if engine.client is shared and hasattr(shared, "sibling"):
            engine.use_client(shared.sibling())
        events: list[Event] = []
        state.prompting = True
        try:
            for note in await choose_model(engine, value, events.append):
                log.info("%s", note)
        except ModelError as exc:
            raise acp.RequestError.invalid_params({"message": str(exc)}) from None
        finally:
            state.prompting = False
            for event in events:  # the compaction's and the context's updates
                await translate(state, event)
