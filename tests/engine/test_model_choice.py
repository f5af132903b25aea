"""`/model`: the models a server offers with their windows, and the switch in the middle of a
session, against the scripted server on 127.0.0.1 through the real provider client."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from support.engine import make_engine, turn
from support.model_list import MODELS, model_server
from support.scripted_server import Reply, ScriptedServer

from mm_tui.config import Settings
from mm_tui.core.events import Event, HistoryCompacted, ModelChanged
from mm_tui.engine.journal import flush_all
from mm_tui.engine.model_choice import (
    choose_model,
    model_lines,
    offered_ids,
    offered_models,
    unknown_model,
)
from mm_tui.engine.model_stream import ModelError
from mm_tui.engine.provider import OpenAIProvider
from mm_tui.engine.servers import Preset
from mm_tui.engine.session import Session
from mm_tui.startup import start


def server(*script: Any, windows: dict[str, int] | None = None) -> ScriptedServer:
    return model_server(*script, windows=windows)


def engine_on(tmp_path: Path, scripted: ScriptedServer, model: str = "small-coder") -> Any:
    client = OpenAIProvider(scripted.base_url, model, retries=0)
    return make_engine(tmp_path, client)


async def test_the_server_s_models_are_listed_with_their_windows(tmp_path: Path) -> None:
    with server() as scripted:
        engine = engine_on(tmp_path, scripted)
        models = await offered_models(engine.client)
        assert [(m.id, m.window) for m in models] == [
            ("small-coder", 4096),
            ("big-coder", 32768),
            ("other", 8192),
        ]
        assert await offered_ids(engine.client) == list(MODELS)
        assert model_lines(models, "small-coder") == [
            "* small-coder  (context 4,096 tokens)",
            "  big-coder  (context 32,768 tokens)",
            "  other  (context 8,192 tokens)",
        ]
        await engine.aclose()


async def test_a_switch_keeps_the_conversation_and_the_next_request_goes_to_the_new_model(
    tmp_path: Path,
) -> None:
    with server(Reply("first answer"), Reply("second answer")) as scripted:
        engine = engine_on(tmp_path, scripted)
        await turn(engine, "hello")
        events: list[Event] = []
        notes = await choose_model(engine, "big-coder", events.append)
        assert notes == ["context window: 32,768 tokens (LM Studio /api/v0/models)"]
        (changed,) = [e for e in events if isinstance(e, ModelChanged)]
        assert changed == ModelChanged(
            model="big-coder", previous="small-coder", provider=engine.client.provider
        )
        assert changed.text == "model: big-coder (was small-coder)"
        assert engine.client.model == "big-coder"
        assert engine.context_usage().window == 32768
        await turn(engine, "and now?")
        last = scripted.requests[-1].body
        assert last["model"] == "big-coder"
        said = [m["content"] for m in last["messages"] if m["role"] in ("user", "assistant")]
        assert said == ["hello", "first answer", "and now?"]
        # In the journal, and a resumed session goes on with the model it last used.
        session = engine.session
        await engine.aclose()
        flush_all()
        records = [r for r in Session.load(session.folder, session.id).records]
        (switch,) = [r for r in records if r["type"] == "model"]
        assert {k: switch[k] for k in ("model", "previous")} == {
            "model": "big-coder",
            "previous": "small-coder",
        }
        assert Session.load(session.folder, session.id).model == "big-coder"


async def test_a_resumed_session_goes_on_with_the_model_it_switched_to(tmp_path: Path) -> None:
    """Start-up's resume on the same server (found by detection, no model named): the model of
    the last switch, not the header's."""
    with server() as scripted:
        made = await start(Settings(baseUrl=scripted.base_url, model="small-coder"), tmp_path)
        await asyncio.wait_for(turn(made.engine, "hello"), 20)
        await choose_model(made.engine, "other", lambda event: None)
        await made.engine.aclose()
        flush_all()
        again = await start(
            Settings(), tmp_path, resume="", presets=(Preset("lmstudio", scripted.base_url),)
        )
        assert again.engine.client.model == "other"
        await again.engine.aclose()


async def test_a_model_the_server_does_not_offer_is_refused_with_the_closest_names(
    tmp_path: Path,
) -> None:
    with server() as scripted:
        engine = engine_on(tmp_path, scripted)
        with pytest.raises(ModelError) as refused:
            await choose_model(engine, "coder", lambda event: None)
        assert str(refused.value) == (
            "the server offers no model coder — did you mean small-coder, big-coder?"
        )
        assert engine.client.model == "small-coder"
        assert not [r for r in engine.session.records if r["type"] == "model"]
        assert unknown_model("nothing-like-it", list(MODELS)) == (
            "the server offers no model nothing-like-it — /model lists them"
        )
        await engine.aclose()


async def test_a_server_that_lists_no_models_is_taken_at_its_word(tmp_path: Path) -> None:
    with ScriptedServer(Reply("ok"), models=None) as scripted:
        engine = engine_on(tmp_path, scripted)
        await choose_model(engine, "whatever-model", lambda event: None)
        assert engine.client.model == "whatever-model"
        await turn(engine, "hi")
        assert scripted.requests[-1].body["model"] == "whatever-model"
        await engine.aclose()


async def test_no_switch_while_a_turn_runs(tmp_path: Path) -> None:
    with server(Reply("slow", delay=5)) as scripted:
        engine = engine_on(tmp_path, scripted)
        running = asyncio.create_task(turn(engine, "hello"))
        while not engine.busy:
            await asyncio.sleep(0.01)
        with pytest.raises(ModelError, match="a turn is running"):
            await choose_model(engine, "big-coder", lambda event: None)
        assert engine.client.model == "small-coder"
        engine.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await engine.aclose()


async def test_a_conversation_too_big_for_the_new_model_is_compacted_by_it(tmp_path: Path) -> None:
    long = "x" * 12000  # about 3,000 tokens: more than the small model's 2,048
    windows = {"small-coder": 2048, "big-coder": 32768, "other": 8192}
    with server(Reply(long), Reply("a short summary"), windows=windows) as scripted:
        engine = engine_on(tmp_path, scripted, model="big-coder")
        await engine.learn_context_window()
        await turn(engine, "write a lot")
        events: list[Event] = []
        notes = await choose_model(engine, "small-coder", events.append)
        assert any("does not fit small-coder's context (2,048)" in note for note in notes), notes
        (compacted,) = [e for e in events if isinstance(e, HistoryCompacted)]
        assert compacted.summary == "a short summary"
        assert scripted.requests[-1].body["model"] == "small-coder"  # the summary: the new model
        usage = engine.context_usage()
        assert usage is not None and usage.used <= usage.window
        assert long not in str(engine.session.messages)
        await engine.aclose()


async def test_the_demo_model_offers_itself(tmp_path: Path) -> None:
    from mm_tui.engine.demo import DemoModel

    engine = make_engine(tmp_path, DemoModel())
    models = await offered_models(engine.client)
    assert [m.id for m in models] == [engine.client.model]
    await engine.aclose()
