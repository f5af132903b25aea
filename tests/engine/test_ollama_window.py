"""`contextWindow` on Ollama: one window for the whole session, checked through /api/ps, and said
once when it cannot be had. Against a scripted server that plays Ollama's models and scheduler
(`support/scripted_server/ollama.py`): it loads the model for each chat request with the context
Ollama would give it, and counts every load."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
from support.engine import make_engine, turn
from support.scripted_server import OllamaModels, ScriptedServer

from mm_tui.config import Settings
from mm_tui.core.events import EngineError, Event
from mm_tui.engine.model_choice import switch_model
from mm_tui.engine.ollama_window import copy_name, keep_window
from mm_tui.engine.turn import Engine
from mm_tui.startup import Started, start

MODEL = "scripted-model"
COPY = "scripted-model-mm32768"


def ollama_server(**knobs: Any) -> ScriptedServer:
    return ScriptedServer(ollama=OllamaModels(**knobs))


def models(server: ScriptedServer) -> OllamaModels:
    assert server.ollama is not None
    return server.ollama


async def started(server: ScriptedServer, tmp_path: Path, **keys: Any) -> Started:
    keys.setdefault("contextWindow", 32768)
    settings = Settings(baseUrl=server.base_url, model=MODEL, **keys)
    return await start(settings, tmp_path)


async def session(made: Started | Engine, turns: int) -> list[Event]:
    engine = made.engine if isinstance(made, Started) else made
    events: list[Event] = []
    for n in range(turns):
        events += await asyncio.wait_for(turn(engine, f"step {n}"), 20)
    return events


def warnings_of(events: list[Event]) -> list[str]:
    """The warnings a session's turns said, without their `[warning: …]` frame."""
    said = [e.message for e in events if isinstance(e, EngineError) and e.level == "warning"]
    assert all(m.startswith("[warning: ") and m.endswith("]") for m in said)
    return [m.removeprefix("[warning: ").removesuffix("]") for m in said]


def asked(server: ScriptedServer, path: str) -> int:
    return sum(1 for r in server.lookups if r.path == path)


async def test_a_session_loads_the_model_once_with_the_configured_window(tmp_path: Path) -> None:
    with ollama_server() as server:
        made = await started(server, tmp_path)
        assert (
            f"Ollama runs {MODEL} as {COPY}, a copy with num_ctx 32768 that shares its weights: "
            "every request asks for the same 32,768-token window, and the model loads once"
        ) in made.notes
        assert "context window: 32,768 tokens (contextWindow in the config)" in made.notes
        assert made.warnings == []
        events = await session(made, 4)
        assert warnings_of(events) == []
        # Every request named the copy, and Ollama loaded it once, with the window asked for.
        assert [body["model"] for body in server.bodies] == [COPY] * 4
        assert models(server).loads == [(f"{COPY}:latest", 32768)]
        assert models(server).params(COPY)["num_ctx"] == 32768
        assert models(server).params(COPY)["stop"] == ["<|eot_id|>"]  # the model's kept
        # /api/ps asked at start-up (nothing loaded) and once after the first answer: it took.
        assert asked(server, "/api/ps") == 2
        assert made.engine.context.kept is not None and made.engine.context.kept.loaded == 32768
        usage = made.engine.context_usage()
        assert usage is not None and usage.window == 32768
        await made.engine.aclose()
        # The next start finds the copy loaded: /api/ps says so at once, and nothing reloads.
        again = await started(server, tmp_path)
        assert f"Ollama has {COPY} loaded with 32,768 tokens" in again.notes
        await session(again, 2)
        assert models(server).loads == [(f"{COPY}:latest", 32768)]
        assert asked(server, "/api/ps") == 3
        await again.engine.aclose()


async def test_without_contextWindow_nothing_changes(tmp_path: Path) -> None:
    with ollama_server() as server:
        made = await started(server, tmp_path, contextWindow=None)
        await session(made, 3)
        assert asked(server, "/api/create") == 0
        assert [body["model"] for body in server.bodies] == [MODEL] * 3
        assert models(server).loads == [(f"{MODEL}:latest", 4096)]  # Ollama's own default
        assert "context window: 4,096 tokens (Ollama /api/show)" in made.notes
        await made.engine.aclose()


async def test_a_server_that_is_not_ollama_is_sent_the_model_as_named(tmp_path: Path) -> None:
    with ScriptedServer(serves="llama.cpp", context_window=8192) as server:
        made = await started(server, tmp_path)
        await session(made, 2)
        assert asked(server, "/api/create") == 0
        assert [body["model"] for body in server.bodies] == [MODEL] * 2
        assert made.warnings == []
        await made.engine.aclose()


async def test_a_smaller_window_loaded_is_said_once_and_kept_to(tmp_path: Path) -> None:
    with ollama_server(memory_ctx=16384) as server:
        made = await started(server, tmp_path)
        events = await session(made, 3)
        said = warnings_of(events)
        assert said == [
            f"Ollama loaded {COPY} with 16,384 tokens, not the 32,768 asked (too little memory "
            "for more?): mm keeps each request within 16,384. Set contextWindow to 16384 or "
            "less, or free memory (ollama ps lists what is loaded) and start mm again"
        ]
        usage = made.engine.context_usage()
        assert usage is not None and (usage.window, usage.source) == (16384, "Ollama /api/ps")
        assert len(models(server).loads) == 1
        await made.engine.aclose()
        # Loaded already at the next start: said there, as a warning, and not again.
        again = await started(server, tmp_path)
        assert again.warnings == said
        assert warnings_of(await session(again, 2)) == []
        await again.engine.aclose()


async def test_an_ollama_that_does_not_say_its_context_is_said_once(tmp_path: Path) -> None:
    with ollama_server(reports_context=False) as server:
        made = await started(server, tmp_path)
        events = await session(made, 3)
        assert warnings_of(events) == [
            f"Ollama does not say what context it loaded {COPY} with (versions before 0.9.7 do "
            "not): mm cannot check that it runs with 32,768 tokens. Start ollama serve with "
            f"OLLAMA_CONTEXT_LENGTH=32768, or set PARAMETER num_ctx 32768 in a Modelfile FROM "
            f"{MODEL} and ollama create it, to be sure"
        ]
        assert models(server).loads == [(f"{COPY}:latest", 32768)]
        await made.engine.aclose()


async def test_a_copy_refused_is_said_at_start_up_with_the_fix(tmp_path: Path) -> None:
    refusal = (403, {"error": "creating models is not allowed\x1b[2J here"})
    with ollama_server(refuse_create=refusal) as server:
        made = await started(server, tmp_path)
        assert made.warnings == [
            f"Ollama would not make {COPY}, a copy of {MODEL} with num_ctx 32768 (HTTP 403: "
            "creating models is not allowed\x1b[2J here): it may run scripted-model with its "
            "default context, not 32,768 tokens. Start ollama serve with "
            "OLLAMA_CONTEXT_LENGTH=32768, or set PARAMETER num_ctx 32768 in a Modelfile FROM "
            f"{MODEL} and ollama create it"
        ]
        assert made.warnings[0] in made.notes
        events = await session(made, 2)
        # The requests go to the model itself; the window it got is kept to, unsaid again.
        assert [body["model"] for body in server.bodies] == [MODEL] * 2
        assert warnings_of(events) == []
        usage = made.engine.context_usage()
        assert usage is not None and usage.window == 4096
        await made.engine.aclose()


async def test_a_model_trained_for_less_is_asked_for_what_it_takes(tmp_path: Path) -> None:
    with ollama_server(trained=8192) as server:
        made = await started(server, tmp_path)
        assert made.warnings == [
            f"{MODEL} takes at most 8,192 tokens: Ollama runs it with 8,192, not the 32,768 of "
            "contextWindow (set contextWindow to 8192 or less)"
        ]
        events = await session(made, 2)
        assert warnings_of(events) == []
        assert models(server).loads == [(f"{MODEL}-mm8192:latest", 8192)]
        usage = made.engine.context_usage()
        assert usage is not None and usage.window == 8192
        await made.engine.aclose()


async def test_a_model_whose_modelfile_says_the_window_is_used_as_it_is(tmp_path: Path) -> None:
    with ollama_server(model_num_ctx={MODEL: 32768}) as server:
        made = await started(server, tmp_path)
        await session(made, 2)
        assert asked(server, "/api/create") == 0
        assert models(server).loads == [(f"{MODEL}:latest", 32768)]
        await made.engine.aclose()


def test_the_copy_is_named_after_the_model_and_its_window() -> None:
    assert copy_name("qwen2.5-coder:7b", 32768) == "qwen2.5-coder:7b-mm32768"
    assert copy_name("llama3.2", 8192) == "llama3.2-mm8192"
    assert copy_name("llama3.2-mm8192", 8192) == "llama3.2-mm8192"


async def test_the_scripted_scheduler_reloads_as_ollama_does() -> None:
    """Why mm does not load the model through the native API and then talk OpenAI: the OpenAI
    request carries no num_ctx, so it runs with the default, and the model is loaded again."""
    with ollama_server() as server:
        root = server.root_url
        async with httpx.AsyncClient(trust_env=False, timeout=5) as client:
            load = {"model": MODEL, "options": {"num_ctx": 32768}, "keep_alive": "30m"}
            assert (await client.post(f"{root}/api/generate", json=load)).status_code == 200
            chat = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
            r = await client.post(f"{server.base_url}/chat/completions", json=chat)
            assert r.status_code == 200
            native = {**chat, "stream": False, "options": {"num_ctx": 32768}}
            assert (await client.post(f"{root}/api/chat", json=native)).status_code == 200
            assert (await client.post(f"{root}/api/chat", json=native)).status_code == 200
            tags = (await client.get(f"{root}/api/tags")).json()
        assert models(server).loads == [
            (f"{MODEL}:latest", 32768),
            (f"{MODEL}:latest", 4096),
            (f"{MODEL}:latest", 32768),
        ]
        assert [m["name"] for m in tags["models"]] == [f"{MODEL}:latest"]


async def test_a_server_over_https_is_not_asked() -> None:
    """Ollama serves plain http: a hosted API with contextWindow set costs no request."""
    assert await keep_window("https://127.0.0.1:9/v1", MODEL, 32768) is None


async def test_a_server_down_at_start_up_is_asked_after_its_first_answer(tmp_path: Path) -> None:
    with ollama_server(memory_ctx=16384) as server:
        engine = make_engine(tmp_path, server, contextWindow=32768)
        engine.server_answering = False  # as start-up finds a server that is not there yet
        assert await engine.learn_context_window() == [
            "context window: 32,768 tokens (contextWindow in the config)"
        ]
        events = await session(engine, 3)
        # The first request went to the model as named; the copy is made after its answer,
        # and checked after the copy's first answer: one reload, one warning.
        assert [body["model"] for body in server.bodies] == [MODEL, COPY, COPY]
        assert models(server).loads == [(f"{MODEL}:latest", 4096), (f"{COPY}:latest", 16384)]
        assert len(warnings_of(events)) == 1
        await engine.aclose()


async def test_a_copy_refused_after_a_late_start_is_said_once(tmp_path: Path) -> None:
    """The server was down at start-up: the copy is asked for after the first answer, and its
    refusal, which start-up would have shown, is said then, once, as a warning."""
    refusal = (403, {"error": "creating models is not allowed"})
    with ollama_server(refuse_create=refusal) as server:
        engine = make_engine(tmp_path, server, contextWindow=32768)
        engine.server_answering = False
        await engine.learn_context_window()
        events = await session(engine, 3)
        said = warnings_of(events)
        assert len(said) == 1
        assert said[0].startswith(f"Ollama would not make {COPY}, a copy of {MODEL}")
        assert "OLLAMA_CONTEXT_LENGTH=32768" in said[0]
        await engine.aclose()


async def test_a_model_switched_to_gets_its_own_copy(tmp_path: Path) -> None:
    with ollama_server(models=(MODEL, "other-model")) as server:
        made = await started(server, tmp_path)
        await session(made, 1)
        notes = await switch_model(made.engine, "other-model", lambda event: None)
        assert any("as other-model-mm32768" in note for note in notes)
        await session(made, 2)
        assert [body["model"] for body in server.bodies] == [COPY] + ["other-model-mm32768"] * 2
        assert models(server).loads == [
            (f"{COPY}:latest", 32768),
            ("other-model-mm32768:latest", 32768),
        ]
        await made.engine.aclose()
