"""Learning the model's real context window: from each kind of server (a real scripted server on
127.0.0.1 playing llama.cpp, Ollama, vLLM and LM Studio), from the table of hosted models, and
from the words of a server's refusal, which the scripted server sends as each server really does."""

from __future__ import annotations

import json
import math
from typing import Any

import httpx
import pytest
from support.scripted_server import (
    Delayed,
    Error,
    Reply,
    ScriptedServer,
    closed_port_url,
    finish_chunk,
    scripted_prompt_tokens,
    scripted_tokens,
    text_chunks,
)

from mm_tui.engine.context_window import (
    ContextWindow,
    known_window,
    read_context_window,
    window_from_error,
)

MODEL = "scripted-model"


def sized(tokens: int, **extra: Any) -> dict[str, Any]:
    """A chat request whose prompt is exactly `tokens` of the scripted server's tokens: the compact
    JSON `[{"role":"user","content":""}]` is 30 characters, and 4 characters make a token."""
    assert tokens >= 8
    body = {"model": MODEL, "messages": [{"role": "user", "content": "x" * (4 * tokens - 30)}]}
    return {**body, **extra}


async def post(server: ScriptedServer, body: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient(trust_env=False, timeout=5) as client:
        return await client.post(f"{server.base_url}/chat/completions", json=body)


def sse_payloads(text: str) -> list[Any]:
    out = []
    for line in text.splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(json.loads(line[len("data: ") :]))
    return out


# --------------------------------------------------------------------------- token counting


def test_scripted_tokens_counts_the_compact_json_by_four_rounded_up():
    body = {"messages": [{"role": "user", "content": "abcd"}]}  # 34 characters
    assert scripted_prompt_tokens(body) == 9
    assert scripted_tokens(body) == 9
    assert scripted_tokens({**body, "max_tokens": 10}) == 19
    assert scripted_tokens({**body, "max_completion_tokens": 7, "max_tokens": 10}) == 16
    tools = [{"type": "function", "function": {"name": "f"}}]
    compact_tools = '[{"type":"function","function":{"name":"f"}}]'
    assert scripted_prompt_tokens({**body, "tools": tools}) == math.ceil(
        (34 + len(compact_tools)) / 4
    )
    assert scripted_prompt_tokens(None) == 0
    assert scripted_prompt_tokens(sized(50)) == 50


# --------------------------------------------------------------------------- llama.cpp


async def test_llama_cpp_props_gives_the_slot_window():
    with ScriptedServer(serves="llama.cpp", context_window=8192) as server:
        found = await read_context_window(server.base_url, MODEL)
    assert found == ContextWindow(8192, "llama.cpp /props")


async def test_llama_cpp_with_several_slots_gives_one_slot_not_the_whole_context():
    with ScriptedServer(serves="llama.cpp", context_window=4096, llama_slots=4) as server:
        async with httpx.AsyncClient(trust_env=False) as client:
            props = (await client.get(f"{server.root_url}/props")).json()
        found = await read_context_window(server.base_url, MODEL)
    assert props["n_ctx"] == 16384 and props["total_slots"] == 4
    assert found is not None and found.tokens == 4096


@pytest.mark.parametrize(
    ("props", "tokens"),
    [
        ({"n_ctx": 4096}, 4096),  # an old build: only the whole context, one slot
        ({"n_ctx": 16384, "total_slots": 2}, 8192),  # shared between two slots
        ({"default_generation_settings": {"n_ctx": 2048}, "n_ctx": 8192}, 2048),
        ({"default_generation_settings": {"n_ctx": "big"}, "n_ctx": 1024}, 1024),
    ],
)
async def test_llama_cpp_props_of_other_builds(props, tokens):
    with ScriptedServer(routes={("GET", "/props"): props}) as server:
        found = await read_context_window(server.base_url, MODEL)
    assert found == ContextWindow(tokens, "llama.cpp /props")


@pytest.mark.parametrize("prefix", ["/engines/v1", "/engines/llama.cpp/v1", "/v1", ""])
async def test_the_root_is_the_base_url_without_its_openai_prefix(prefix):
    with ScriptedServer(serves="llama.cpp", context_window=3072, prefix=prefix) as server:
        found = await read_context_window(server.base_url + "/", MODEL)
        paths = sorted(r.path for r in server.lookups)
    assert found is not None and found.tokens == 3072
    assert "/props" in paths and "/api/show" in paths and "/api/v0/models" in paths
    assert f"{prefix}/models" in paths


# --------------------------------------------------------------------------- Ollama


async def test_ollama_loaded_model_reports_what_it_really_runs_with():
    with ScriptedServer(
        serves="ollama", context_window=4096, model_max=131072, models=["llama3.2"]
    ) as server:
        found = await read_context_window(server.base_url, "llama3.2")
    assert found is not None
    assert (found.tokens, found.source) == (4096, "Ollama /api/ps")
    assert found.note == (
        "Ollama runs llama3.2 with a 4,096-token context (the model takes 131,072): start "
        "ollama serve with OLLAMA_CONTEXT_LENGTH=32768, or set num_ctx in a Modelfile"
    )


async def test_ollama_not_loaded_and_no_num_ctx_assumes_the_default():
    with ScriptedServer(
        serves="ollama", context_window=4096, model_max=131072, loaded=False
    ) as server:
        found = await read_context_window(server.base_url, MODEL)
    assert found is not None
    assert (found.tokens, found.source) == (4096, "Ollama /api/show")
    assert "default 4,096-token context" in found.note
    assert "131,072" in found.note and "OLLAMA_CONTEXT_LENGTH=32768" in found.note


async def test_ollama_default_is_capped_by_a_small_model():
    with ScriptedServer(serves="ollama", context_window=2048, loaded=False) as server:
        found = await read_context_window(server.base_url, MODEL)
    assert found == ContextWindow(2048, "Ollama /api/show")


async def test_ollama_num_ctx_of_the_modelfile_is_what_runs():
    with ScriptedServer(
        serves="ollama", context_window=8192, model_max=131072, ollama_num_ctx=8192, loaded=False
    ) as server:
        async with httpx.AsyncClient(trust_env=False) as client:
            show = (await client.post(f"{server.root_url}/api/show", json={"model": MODEL})).json()
        found = await read_context_window(server.base_url, MODEL)
    assert "num_ctx                        8192" in show["parameters"]
    assert found is not None
    assert (found.tokens, found.source) == (8192, "Ollama /api/show")
    assert "num_ctx 8,192" in found.note and "131,072" in found.note


async def test_ollama_num_ctx_larger_than_the_model_is_capped_without_a_note():
    with ScriptedServer(
        serves="ollama", context_window=32768, ollama_num_ctx=65536, loaded=False
    ) as server:
        found = await read_context_window(server.base_url, MODEL)
    assert found == ContextWindow(32768, "Ollama /api/show")


async def test_ollama_running_the_whole_model_needs_no_note():
    with ScriptedServer(serves="ollama", context_window=32768, model_max=32768) as server:
        found = await read_context_window(server.base_url, MODEL)
    assert found == ContextWindow(32768, "Ollama /api/ps")


async def test_ollama_tagged_names_match_untagged_ones():
    with ScriptedServer(
        serves="ollama", context_window=16384, model_max=131072, models=["qwen3:8b", "llama3.2"]
    ) as server:
        untagged = await read_context_window(server.base_url, "llama3.2")
        tagged = await read_context_window(server.base_url, "llama3.2:latest")
        other = await read_context_window(server.base_url, "qwen3:8b")
    assert untagged is not None and untagged.tokens == 16384
    assert tagged is not None and (tagged.tokens, tagged.source) == (16384, "Ollama /api/ps")
    assert other is not None and other.tokens == 16384


async def test_ollama_without_the_model_says_nothing():
    with ScriptedServer(serves="ollama", context_window=4096, models=["llama3.2"]) as server:
        found = await read_context_window(server.base_url, "mistral")
    assert found is None


# --------------------------------------------------------------------------- vLLM and LM Studio


async def test_vllm_models_entry_gives_max_model_len():
    with ScriptedServer(serves="vllm", context_window=32768, models=["Qwen/Qwen3-8B"]) as server:
        found = await read_context_window(server.base_url, "Qwen/Qwen3-8B")
        other = await read_context_window(server.base_url, "Qwen/Qwen3-14B")
    assert found == ContextWindow(32768, "vLLM /v1/models")
    assert other is None


async def test_lmstudio_loaded_model_gives_its_loaded_context():
    with ScriptedServer(
        serves="lmstudio", context_window=4096, model_max=32768, models=["qwen3-8b"]
    ) as server:
        found = await read_context_window(server.base_url, "qwen3-8b")
    assert found is not None
    assert (found.tokens, found.source) == (4096, "LM Studio /api/v0/models")
    assert "4,096-token" in found.note and "lms load qwen3-8b --context-length 32768" in found.note


async def test_lmstudio_model_not_loaded_gives_its_maximum_with_a_warning():
    with ScriptedServer(
        serves="lmstudio", context_window=4096, model_max=131072, loaded=False
    ) as server:
        found = await read_context_window(server.base_url, MODEL)
    assert found is not None
    assert (found.tokens, found.source) == (131072, "LM Studio /api/v0/models")
    assert "has not loaded" in found.note


async def test_lmstudio_fully_loaded_needs_no_note():
    with ScriptedServer(serves="lmstudio", context_window=8192) as server:
        found = await read_context_window(server.base_url, MODEL)
    assert found == ContextWindow(8192, "LM Studio /api/v0/models")


# --------------------------------------------------------------------------- the table, precedence


async def test_hosted_model_comes_from_the_table_when_no_server_says():
    with ScriptedServer(models=["gpt-4o-2024-08-06"]) as server:
        found = await read_context_window(server.base_url, "gpt-4o-2024-08-06")
    assert found == ContextWindow(128_000, "known model table")


async def test_the_table_answers_even_when_the_server_is_unreachable():
    found = await read_context_window(closed_port_url(), "gpt-4.1-mini", timeout=0.5)
    assert found == ContextWindow(1_047_576, "known model table")


async def test_llama_cpp_wins_over_every_other_answer():
    routes = {
        ("GET", "/api/v0/models"): {"data": [{"id": MODEL, "loaded_context_length": 1000}]},
        ("GET", "/v1/models"): {"data": [{"id": MODEL, "max_model_len": 2000}]},
        ("GET", "/api/ps"): {"models": [{"name": MODEL, "context_length": 3000}]},
    }
    with ScriptedServer(serves="llama.cpp", context_window=4000, routes=routes) as server:
        found = await read_context_window(server.base_url, MODEL)
    assert found is not None and found.tokens == 4000


async def test_ollama_wins_over_vllm_and_vllm_over_lmstudio():
    routes = {
        ("GET", "/api/v0/models"): {"data": [{"id": MODEL, "loaded_context_length": 1000}]},
        ("GET", "/v1/models"): {"data": [{"id": MODEL, "max_model_len": 2000}]},
    }
    with ScriptedServer(serves="ollama", context_window=3000, routes=routes) as server:
        ollama = await read_context_window(server.base_url, MODEL)
    with ScriptedServer(routes=routes) as server:
        vllm = await read_context_window(server.base_url, MODEL)
    assert ollama is not None and ollama.tokens == 3000
    assert vllm == ContextWindow(2000, "vLLM /v1/models")


async def test_a_server_that_says_wins_over_the_table():
    with ScriptedServer(serves="vllm", context_window=8192, models=["gpt-4o"]) as server:
        found = await read_context_window(server.base_url, "gpt-4o")
    assert found == ContextWindow(8192, "vLLM /v1/models")


async def test_api_key_is_sent_as_a_bearer_token():
    with ScriptedServer(serves="vllm", context_window=8192) as server:
        await read_context_window(server.base_url, MODEL, api_key="sk-ctx")
        with_key = list(server.lookups)
        server.lookups.clear()
        await read_context_window(server.base_url, MODEL)
        without_key = list(server.lookups)
    assert len(with_key) == 5
    assert all(r.headers.get("authorization") == "Bearer sk-ctx" for r in with_key)
    assert all("authorization" not in r.headers for r in without_key)
    assert next(r for r in with_key if r.path == "/api/show").body == {"model": MODEL}


async def test_a_configured_proxy_is_not_used_for_a_local_server(monkeypatch):
    dead = closed_port_url("")
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, dead)
    with ScriptedServer(serves="llama.cpp", context_window=1234) as server:
        found = await read_context_window(server.base_url, MODEL)
    assert found is not None and found.tokens == 1234


# --------------------------------------------------------------------------- when nothing says

ALL_ROUTES = [
    ("GET", "/props"),
    ("POST", "/api/show"),
    ("GET", "/api/ps"),
    ("GET", "/v1/models"),
    ("GET", "/api/v0/models"),
]


async def test_a_dead_port_gives_none():
    # refused at once: a reading that waited out its hour would time out
    assert await read_context_window(closed_port_url(), MODEL, timeout=3600) is None


async def test_404_everywhere_gives_none():
    with ScriptedServer(models=None) as server:
        assert await read_context_window(server.base_url, MODEL) is None
        assert len(server.lookups) == 5  # every source was asked


async def test_a_plain_openai_server_gives_none():
    with ScriptedServer() as server:
        assert await read_context_window(server.base_url, MODEL) is None


@pytest.mark.parametrize(
    "answer", [b"not json {", "<html><body>It works!</body></html>", b"", "null", "[1, 2]"]
)
async def test_garbage_bodies_give_none(answer):
    with ScriptedServer(routes={route: answer for route in ALL_ROUTES}) as server:
        assert await read_context_window(server.base_url, MODEL) is None


async def test_a_web_app_answering_empty_json_everywhere_is_no_server():
    with ScriptedServer(routes={route: {} for route in ALL_ROUTES}) as server:
        assert await read_context_window(server.base_url, MODEL) is None


@pytest.mark.parametrize(
    "routes",
    [
        {("GET", "/props"): {"default_generation_settings": {"n_ctx": "4096"}}},
        {("GET", "/props"): {"default_generation_settings": [], "n_ctx": True}},
        {("GET", "/props"): {"n_ctx": -4096}},
        {("GET", "/props"): {"n_ctx": 4096.5}},
        {("POST", "/api/show"): {"model_info": ["llama.context_length", 4096]}},
        {("POST", "/api/show"): {"model_info": "x", "parameters": 8192}},
        {("GET", "/api/ps"): {"models": [{"name": MODEL, "context_length": "4096"}]}},
        {("GET", "/api/ps"): {"models": {"name": MODEL}}},
        {("GET", "/v1/models"): {"data": [{"id": MODEL, "max_model_len": None}]}},
        {("GET", "/v1/models"): {"data": {"id": MODEL, "max_model_len": 4096}}},
        {("GET", "/v1/models"): {"data": [[MODEL, 4096]]}},
        {("GET", "/api/v0/models"): {"data": [{"id": MODEL, "max_context_length": "4k"}]}},
        {("GET", "/api/v0/models"): [{"id": MODEL, "max_context_length": 4096}]},
    ],
)
async def test_wrong_types_give_none(routes):
    with ScriptedServer(routes=routes) as server:
        assert await read_context_window(server.base_url, MODEL) is None


async def test_errors_with_json_bodies_give_none():
    routes = {route: Error(500, "boom") for route in ALL_ROUTES}
    with ScriptedServer(routes=routes) as server:
        assert await read_context_window(server.base_url, MODEL) is None


async def test_a_slow_server_past_the_timeout_gives_none():
    props = {"default_generation_settings": {"n_ctx": 4096}}
    routes = {route: Delayed(5, props) for route in ALL_ROUTES}
    with ScriptedServer(routes=routes) as server:
        found = await read_context_window(server.base_url, MODEL, timeout=0.3)
    assert found is None  # without the timeout, the answers 5 s later would give 4096


async def test_a_slow_endpoint_does_not_hide_a_quick_one():
    props = {"default_generation_settings": {"n_ctx": 4096}}
    routes = {("GET", "/props"): Delayed(5, props)}
    with ScriptedServer(serves="vllm", context_window=16384, routes=routes) as server:
        found = await read_context_window(server.base_url, MODEL, timeout=0.3)
    # /props comes first: without the timeout its answer, 5 s later, would be the one found
    assert found == ContextWindow(16384, "vLLM /v1/models")


async def test_an_invalid_base_url_gives_none():
    assert await read_context_window("not a url", MODEL, timeout=0.3) is None
    assert await read_context_window("http://[::1", MODEL, timeout=0.3) is None
    assert await read_context_window("http://[::1", "gpt-4o", timeout=0.3) == ContextWindow(
        128_000, "known model table"
    )


# --------------------------------------------------------------------------- error texts

REAL_WORDINGS = [
    # llama-cpp-python, the ValueError of llama_cpp/llama.py
    ("Requested tokens (2100) exceed context window of 2048", 2048),
    # llama-cpp-python's server (llama_cpp/server/errors.py), chat and text completions
    (
        "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens "
        "(2100 in the messages, None in the completion). Please reduce the length of the messages "
        "or completion.",
        2048,
    ),
    (
        "This model's maximum context length is 512 tokens, however you requested 600 tokens "
        "(500 in your prompt; 100 for the completion). Please reduce your prompt; or completion "
        "length.",
        512,
    ),
    # OpenAI
    (
        "This model's maximum context length is 8192 tokens. However, your messages resulted in "
        "8300 tokens. Please reduce the length of the messages.",
        8192,
    ),
    (
        "This model's maximum context length is 16385 tokens. However, you requested 17000 tokens "
        "(15000 in the messages, 1000 in the functions, and 1000 in the completion). Please reduce "
        "the length of the messages, functions, or completion.",
        16385,
    ),
    # vLLM, current and older
    (
        "This model's maximum context length is 262144 tokens. However, you requested 0 output "
        "tokens and your prompt contains at least 262145 input tokens, for a total of at least "
        "262145 tokens. Please reduce the length of the input prompt or the number of requested "
        "output tokens. (parameter=input_tokens, value=262145)",
        262144,
    ),
    (
        "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context "
        "length is 4096 tokens and your request has 2778 input tokens (8000 > 4096 - 2778). None",
        4096,
    ),
    (
        "You passed 4 input tokens and requested 2045 output tokens. However, the model's context "
        "length is only 2048 tokens, resulting in a maximum input length of 3 tokens.",
        2048,
    ),
    # llama.cpp server, the message alone, current and older
    (
        "request (2100 tokens) exceeds the available context size (2048 tokens), try increasing it",
        2048,
    ),
    ("input (5000 tokens) is larger than the max context size (4096 tokens). skipping", 4096),
    # llama.cpp server, the whole body (the older message names no number: n_ctx beside it does)
    (
        '{"error":{"code":400,"message":"the request exceeds the available context size, try '
        'increasing it","type":"exceed_context_size_error","n_prompt_tokens":2100,"n_ctx":2048}}',
        2048,
    ),
    # the same as the openai client prints it
    (
        "Error code: 400 - {'error': {'code': 400, 'message': 'the request exceeds the available "
        "context size, try increasing it', 'type': 'exceed_context_size_error', "
        "'n_prompt_tokens': 2100, 'n_ctx': 2048}}",
        2048,
    ),
    # LM Studio
    (
        '{"error":"Trying to keep the first 6269 tokens when context the overflows. However, the '
        "model is loaded with context length of only 4096 tokens, which is not enough. Try to "
        'load the model with a larger context length, or provide a shorter input"}',
        4096,
    ),
]


@pytest.mark.parametrize(("text", "window"), REAL_WORDINGS)
def test_window_from_error_reads_each_real_wording(text, window):
    assert window_from_error(text) == window


@pytest.mark.parametrize(
    "text",
    [
        "",
        "the request exceeds the available context size, try increasing it",
        "Your input exceeds the context window of this model. Please adjust your input and try "
        "again.",
        "The number of tokens to keep from the initial prompt is greater than the context length.",
        "Rate limit reached for gpt-4o: Limit 30000, Used 29000, Requested 2000.",
        '{"error":{"message":"model \'llama3.2\' not found"}}',
    ],
)
def test_window_from_error_is_none_when_no_window_is_stated(text):
    assert window_from_error(text) is None


# --------------------------------------------------------------------------- the table


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4o", 128_000),
        ("gpt-4o-mini", 128_000),
        ("gpt-4o-2024-08-06", 128_000),
        ("gpt-4o-mini-2024-07-18", 128_000),
        ("GPT-4o", 128_000),
        ("openai/gpt-4o", 128_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-4.1-mini", 1_047_576),
        ("gpt-4.1-nano-2025-04-14", 1_047_576),
        ("gpt-4-turbo", 128_000),
        ("gpt-4-turbo-2024-04-09", 128_000),
        ("gpt-4-1106-preview", 128_000),
        ("gpt-4", 8_192),
        ("gpt-4-0613", 8_192),
        ("gpt-4-32k", 32_768),
        ("gpt-3.5-turbo", 16_385),
        ("gpt-3.5-turbo-0125", 16_385),
        ("gpt-3.5-turbo-instruct", 4_096),
        ("o1", 200_000),
        ("o1-mini", 128_000),
        ("o3", 200_000),
        ("o3-mini", 200_000),
        ("o4-mini", 200_000),
        ("o4-mini-2025-04-16", 200_000),
        ("gpt-5", 400_000),
        ("gpt-5-mini", 400_000),
        ("gpt-5-nano-2025-08-07", 400_000),
        ("gpt-5-chat-latest", 128_000),
    ],
)
def test_known_window(model, window):
    assert known_window(model) == window


@pytest.mark.parametrize("model", ["llama3.2", "qwen3:8b", "gpt-4ox", "gpt-40", "o10", "o", ""])
def test_known_window_is_none_for_other_models(model):
    assert known_window(model) is None


# --------------------------------------------------------------------------- enforcing servers


async def test_llama_cpp_python_refuses_as_it_really_does():
    with ScriptedServer(Reply("fine"), context_window=100) as server:
        refused = await post(server, sized(100))
        assert server.pending == 1  # the refused request did not use up the script
        fits = await post(server, sized(99))
        assert len(server.requests) == 2
    assert refused.status_code == 400
    assert refused.json() == {
        "error": {
            "message": "This model's maximum context length is 100 tokens. However, you "
            "requested 100 tokens (100 in the messages, None in the completion). Please reduce "
            "the length of the messages or completion.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
    assert fits.status_code == 200
    assert fits.json()["choices"][0]["message"]["content"] == "fine"
    assert window_from_error(refused.text) == 100


async def test_llama_cpp_python_counts_the_prompt_only_and_echoes_max_tokens():
    with ScriptedServer(context_window=100) as server:
        fits = await post(server, sized(99, max_tokens=500))
        refused = await post(server, sized(120, max_tokens=30))
    assert fits.status_code == 200
    assert refused.status_code == 400
    assert "you requested 150 tokens (120 in the messages, 30 in the completion)" in refused.text


async def test_llama_cpp_refuses_as_it_really_does():
    with ScriptedServer(context_window=200, context_style="llama.cpp") as server:
        refused = await post(server, sized(250, stream=True))
        fits = await post(server, sized(199, stream=True))
    assert refused.status_code == 400
    assert refused.headers["content-type"] == "application/json"
    assert refused.json() == {
        "error": {
            "code": 400,
            "message": "request (250 tokens) exceeds the available context size (200 tokens), "
            "try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 250,
            "n_ctx": 200,
        }
    }
    assert fits.status_code == 200 and "data: [DONE]" in fits.text
    assert window_from_error(refused.text) == 200
    assert window_from_error(refused.json()["error"]["message"]) == 200


async def test_vllm_refuses_prompt_plus_output_as_it_really_does():
    with ScriptedServer(context_window=100, context_style="vllm") as server:
        fits = await post(server, sized(80, max_tokens=20))
        refused = await post(server, sized(81, max_tokens=20))
        no_output = await post(server, sized(101))
    assert fits.status_code == 200
    assert refused.status_code == 400
    assert refused.json() == {
        "error": {
            "message": "This model's maximum context length is 100 tokens. However, you requested "
            "20 output tokens and your prompt contains at least 81 input tokens, for a total of "
            "at least 101 tokens. Please reduce the length of the input prompt or the number of "
            "requested output tokens. (parameter=input_tokens, value=81)",
            "type": "BadRequestError",
            "param": "input_tokens",
            "code": 400,
        }
    }
    assert no_output.status_code == 400
    assert "you requested 0 output tokens and your prompt contains at least 101" in no_output.text
    assert window_from_error(refused.text) == 100


async def test_openai_refuses_as_it_really_does():
    with ScriptedServer(context_window=100, context_style="openai") as server:
        messages_only = await post(server, sized(101))
        with_output = await post(server, sized(90, max_completion_tokens=20))
        fits = await post(server, sized(80, max_tokens=20))
    assert messages_only.status_code == 400
    assert messages_only.json()["error"] == {
        "message": "This model's maximum context length is 100 tokens. However, your messages "
        "resulted in 101 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
    assert with_output.status_code == 400
    assert (
        "you requested 110 tokens (90 in the messages, 20 in the completion)"
        in (with_output.json()["error"]["message"])
    )
    assert fits.status_code == 200
    assert window_from_error(messages_only.text) == window_from_error(with_output.text) == 100


async def test_lmstudio_refuses_as_it_really_does():
    with ScriptedServer(serves="lmstudio", context_window=4096) as server:
        refused = await post(server, sized(5000))
    assert refused.status_code == 400
    assert refused.json() == {
        "error": "Trying to keep the first 5000 tokens when context the overflows. However, the "
        "model is loaded with context length of only 4096 tokens, which is not enough. Try to "
        "load the model with a larger context length, or provide a shorter input"
    }
    assert window_from_error(refused.text) == 4096


async def test_serving_a_window_enforces_it_in_that_servers_words():
    with ScriptedServer(serves="llama.cpp", context_window=100) as llama:
        from_llama = await post(llama, sized(100))
    with ScriptedServer(serves="vllm", context_window=100) as vllm:
        from_vllm = await post(vllm, sized(101))
    assert from_llama.json()["error"]["type"] == "exceed_context_size_error"
    assert from_vllm.json()["error"]["type"] == "BadRequestError"


async def test_ollama_cuts_rather_than_refuses():
    with ScriptedServer(Reply("cut"), serves="ollama", context_window=100) as server:
        answer = await post(server, sized(500))
    assert answer.status_code == 200
    assert answer.json()["choices"][0]["message"]["content"] == "cut"


async def test_without_a_window_nothing_is_refused():
    with ScriptedServer(Reply("big is fine")) as server:
        answer = await post(server, sized(100_000))
    assert answer.status_code == 200


def test_bad_options_are_refused():
    with pytest.raises(ValueError):
        ScriptedServer(serves="tgi", context_window=100)
    with pytest.raises(ValueError):
        ScriptedServer(serves="llama.cpp")
    with pytest.raises(ValueError):
        ScriptedServer(context_window=100, context_style="ollama")


# --------------------------------------------------------------------------- usage


async def test_report_usage_gives_the_prompt_tokens_in_the_stream():
    include = {"stream": True, "stream_options": {"include_usage": True}}
    with ScriptedServer(Reply("hi", usage=(10, 5)), report_usage=True) as server:
        streamed = await post(server, sized(42, **include))
    usage = [p["usage"] for p in sse_payloads(streamed.text) if p.get("usage")]
    assert usage == [{"prompt_tokens": 42, "completion_tokens": 5, "total_tokens": 47}]


async def test_report_usage_appends_to_a_chunk_list_without_usage():
    include = {"stream": True, "stream_options": {"include_usage": True}}
    with ScriptedServer([*text_chunks("hi"), finish_chunk()], report_usage=True) as server:
        streamed = await post(server, sized(30, **include))
    payloads = sse_payloads(streamed.text)
    assert payloads[-1]["usage"] == {
        "prompt_tokens": 30,
        "completion_tokens": 0,
        "total_tokens": 30,
    }
    assert payloads[-1]["choices"] == []


async def test_report_usage_in_a_completion():
    with ScriptedServer(Reply("hi", usage=(10, 5)), report_usage=True) as server:
        answer = await post(server, sized(64))
    assert answer.json()["usage"] == {
        "prompt_tokens": 64,
        "completion_tokens": 5,
        "total_tokens": 69,
    }


async def test_usage_of_scripted_replies_is_unchanged_by_default():
    include = {"stream": True, "stream_options": {"include_usage": True}}
    with ScriptedServer(Reply("hi", usage=(10, 5)), Reply("hi", usage=(10, 5))) as server:
        default = await post(server, sized(42, **include))
    with ScriptedServer(Reply("hi", usage=(10, 5)), report_usage=True) as server:
        not_asked = await post(server, sized(42, stream=True))
    for answer in (default, not_asked):
        usage = [p["usage"] for p in sse_payloads(answer.text) if p.get("usage")]
        assert usage == [{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}]


@pytest.mark.parametrize(
    ("serves", "provider", "model", "asked"),
    [
        ("llama.cpp", "llama.cpp", MODEL, ["/props"]),
        ("ollama", "Ollama", "llama3.2", ["/api/ps", "/api/show"]),
        ("vllm", "vLLM", "Qwen/Qwen3-8B", ["/v1/models"]),
        ("lmstudio", "LM Studio", "qwen3-8b", ["/api/v0/models"]),
    ],
)
async def test_a_server_of_a_known_kind_is_asked_its_own_endpoints_alone(
    serves: str, provider: str, model: str, asked: list[str]
) -> None:
    """Start-up knows the kind of a detected server (its port) or a named one: on the way to
    ready, that kind's endpoints are asked, not all five."""
    with ScriptedServer(serves=serves, context_window=8192, models=[model]) as server:
        found = await read_context_window(server.base_url, model, provider=provider)
        paths = sorted(r.path for r in server.lookups)
    assert found is not None and found.tokens == 8192
    assert paths == asked


async def test_a_server_taken_for_another_kind_is_asked_everything_after():
    """A port's usual server is not always the one there (an Ollama on llama.cpp's port):
    when the named kind's endpoint tells nothing, every source is asked, as for an unknown
    server, and the most specific answer wins."""
    with ScriptedServer(serves="ollama", context_window=4096, models=["llama3.2"]) as server:
        found = await read_context_window(server.base_url, "llama3.2", provider="llama.cpp")
        paths = [r.path for r in server.lookups]
    assert found is not None and found.tokens == 4096 and "Ollama" in found.source
    assert paths[0] == "/props"
    assert sorted(paths[1:]) == ["/api/ps", "/api/show", "/api/v0/models", "/v1/models"]
