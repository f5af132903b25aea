"""The model as ACP's configuration option: session/new and session/load offer the server's
models with the one in use, session/set_config_option switches one session (the others keep
theirs), and a reopened session goes on with the model it switched to. The real `mm -acp` on the
scripted server, driven by the acp package's own client."""

from __future__ import annotations

from pathlib import Path

import acp
import pytest
from acp.exceptions import RequestError
from support.acp_helpers import MODEL, Recorder, ask, mm_acp, start
from support.model_list import model_server
from support.scripted_server import Reply

MODELS = (MODEL, "big-coder", "other")


def model_option(response) -> tuple[str, list[str]]:  # noqa: ANN001 - an ACP response
    (option,) = response.config_options
    assert (option.id, option.category, option.type) == ("model", "model", "select")
    return option.current_value, [choice.value for choice in option.options]


async def test_the_model_is_an_option_that_switches_one_session(tmp_path: Path) -> None:
    with model_server(Reply("one"), Reply("two"), Reply("three"), models=MODELS) as server:
        async with mm_acp(tmp_path, server, Recorder()) as (conn, _log):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            first = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            assert model_option(first) == (MODEL, list(MODELS))
            other = await start(conn, tmp_path)
            assert await ask(conn, first.session_id, "hello") == "end_turn"
            switched = await conn.set_config_option(
                config_id="model", session_id=first.session_id, value="big-coder"
            )
            assert model_option(switched) == ("big-coder", list(MODELS))
            assert await ask(conn, first.session_id, "and now?") == "end_turn"
            on_first = server.requests[-1].body
            assert await ask(conn, other, "hi") == "end_turn"
            on_other = server.requests[-1].body
            with pytest.raises(RequestError) as refused:
                await conn.set_config_option(config_id="model", session_id=other, value="coder")
            assert refused.value.code == -32602
            assert "the server offers no model coder — did you mean big-coder?" in str(
                refused.value.data
            )
        # A new process reopens the switched session: it goes on with big-coder.
        server.script(Reply("four"))
        async with mm_acp(tmp_path, server, Recorder()) as (conn, _log):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            loaded = await conn.load_session(
                cwd=str(tmp_path), session_id=first.session_id, mcp_servers=[]
            )
            assert model_option(loaded) == ("big-coder", list(MODELS))
            assert await ask(conn, first.session_id, "still there?") == "end_turn"
            reopened = server.requests[-1].body
    assert on_first["model"] == "big-coder"
    said = [m["content"] for m in on_first["messages"] if m["role"] in ("user", "assistant")]
    assert said == ["hello", "one", "and now?"]
    assert on_other["model"] == MODEL  # the other session kept the shared model
    assert reopened["model"] == "big-coder"
