"""The OpenAI-compatible provider against a real scripted server on 127.0.0.1 (no httpx mocks)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.scripted_server import (
    SSE,
    Completion,
    EmptyBody,
    Error,
    Raw,
    Reply,
    ScriptedServer,
    call,
    closed_port_url,
    drop_after,
    encode_sse,
    finish_chunk,
    interleave,
    reasoning_chunks,
    role_chunk,
    silence_after,
    split_bytes,
    text_chunks,
    tool_call_chunks,
    usage_chunk,
)
from support.waits import Waits

from mm_tui.core.events import Usage
from mm_tui.engine.model_stream import (
    ModelError,
    ReasoningChunk,
    StreamEnd,
    TextChunk,
    ToolCall,
    ToolCallChunk,
)
from mm_tui.engine.provider import OpenAIProvider
from mm_tui.engine.servers import (
    PRESETS,
    DetectedServer,
    Preset,
    detect_local_server,
    find_preset,
    list_models,
    provider_name,
)

MESSAGES = [{"role": "user", "content": "hi"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "run a command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]


@pytest.fixture
def server():
    with ScriptedServer() as s:
        yield s


@pytest.fixture
async def provider(server):
    p = OpenAIProvider(server.base_url, "scripted-model", retries=3, backoff=0.01)
    yield p
    await p.aclose()


async def collect(
    provider: OpenAIProvider, tools: list[dict[str, Any]] | None = None, into: list | None = None
) -> list:
    out = [] if into is None else into
    async for item in provider.stream(MESSAGES, tools or []):
        out.append(item)
    return out


def text_of(chunks: list) -> str:
    return "".join(c.text for c in chunks if isinstance(c, TextChunk))


def reasoning_of(chunks: list) -> str:
    return "".join(c.text for c in chunks if isinstance(c, ReasoningChunk))


def end_of(chunks: list) -> StreamEnd:
    assert chunks and isinstance(chunks[-1], StreamEnd), chunks
    assert sum(isinstance(c, StreamEnd) for c in chunks) == 1
    return chunks[-1]


# --------------------------------------------------------------------------- requests


async def test_request_carries_model_messages_stream_and_usage_option(server, provider):
    server.script(Reply("hi"))
    await collect(provider)
    (req,) = server.requests
    assert req.path == "/v1/chat/completions"
    assert req["model"] == "scripted-model"
    assert req["messages"] == MESSAGES
    assert req["stream"] is True
    assert req["stream_options"] == {"include_usage": True}
    assert "tools" not in req  # omitted when empty: some servers reject "tools": []
    assert "temperature" not in req
    assert "authorization" not in req.headers


async def test_request_with_tools_temperature_and_api_key():
    with ScriptedServer(api_key="sk-test") as server:
        p = OpenAIProvider(server.base_url, "m", api_key="sk-test", temperature=0.2, backoff=0.01)
        chunks = await collect(p, TOOLS)
        await p.aclose()
        assert text_of(chunks) == "ok"
        (req,) = server.requests
        assert req.headers["authorization"] == "Bearer sk-test"
        assert req["tools"] == TOOLS
        assert req["temperature"] == 0.2


async def test_wrong_api_key_is_an_error_with_a_hint():
    with ScriptedServer(api_key="sk-right") as server:
        p = OpenAIProvider(server.base_url, "m", api_key="sk-wrong", backoff=0.01)
        with pytest.raises(ModelError) as err:
            await collect(p)
        await p.aclose()
    assert err.value.status == 401
    assert "Incorrect API key provided" in err.value.message
    assert "apiKey" in err.value.message


# --------------------------------------------------------------------------- chunks


async def test_text_one_character_at_a_time(server, provider):
    server.script([role_chunk(), *text_chunks("Hello, wörld!", split=1), finish_chunk("stop")])
    chunks = await collect(provider)
    assert [c.text for c in chunks[:-1]] == list("Hello, wörld!")
    # The hot path builds chunks without their __init__: they must be the same objects.
    assert chunks[0] == TextChunk("H") and hash(chunks[0]) == hash(TextChunk("H"))
    assert repr(chunks[0]) == "TextChunk(text='H')"
    with pytest.raises(AttributeError):
        chunks[0].text = "changed"  # still frozen
    end = end_of(chunks)
    assert end.finish_reason == "stop"
    assert end.tool_calls == ()


async def test_tool_arguments_one_character_at_a_time(server, provider):
    args = '{"command": "ls -la"}'
    server.script([*tool_call_chunks("call_a", "bash", args, split=1), finish_chunk("tool_calls")])
    chunks = await collect(provider, TOOLS)
    updates = [c for c in chunks if isinstance(c, ToolCallChunk)]
    # The name alone first, then the arguments growing one character at a time.
    assert [u.arguments for u in updates] == [args[:i] for i in range(len(args) + 1)]
    assert {u.name for u in updates} == {"bash"}
    assert {u.index for u in updates} == {0}
    end = end_of(chunks)
    assert end.finish_reason == "tool_calls"
    assert end.tool_calls == (ToolCall("call_a", "bash", args),)


async def test_two_tool_calls_interleaved_end_in_index_order(server, provider):
    a = '{"path": "README.md"}'
    b = '{"command": "pytest -q"}'
    # Index 1 opens first, and the pieces of the two calls alternate.
    server.script(
        [
            *interleave(
                tool_call_chunks("call_b", "bash", b, split=3, index=1),
                tool_call_chunks("call_a", "read_file", a, split=2, index=0),
            ),
            finish_chunk("tool_calls"),
        ]
    )
    chunks = await collect(provider, TOOLS)
    updates = [c for c in chunks if isinstance(c, ToolCallChunk)]
    assert updates[0] == ToolCallChunk(1, "bash", "")
    assert updates[1] == ToolCallChunk(0, "read_file", "")
    last = {u.index: u for u in updates}
    assert last[0] == ToolCallChunk(0, "read_file", a)
    assert last[1] == ToolCallChunk(1, "bash", b)
    assert end_of(chunks).tool_calls == (
        ToolCall("call_a", "read_file", a),
        ToolCall("call_b", "bash", b),
    )


async def test_text_then_tool_call_in_one_answer(server, provider):
    server.script(
        Reply("Let me look.", tool_calls=[call("bash", {"command": "ls"}, id="c1")], split=2)
    )
    chunks = await collect(provider, TOOLS)
    assert text_of(chunks) == "Let me look."
    assert end_of(chunks).tool_calls == (ToolCall("c1", "bash", '{"command": "ls"}'),)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_deltas_under_either_name(server, provider, field):
    server.script(
        [
            *reasoning_chunks("I should greet.", split=3, field=field),
            *text_chunks("Hi!"),
            finish_chunk(),
        ]
    )
    chunks = await collect(provider)
    assert reasoning_of(chunks) == "I should greet."
    assert text_of(chunks) == "Hi!"
    kinds = [type(c) for c in chunks]
    assert kinds.index(TextChunk) > max(i for i, k in enumerate(kinds) if k is ReasoningChunk)


async def test_null_fields_are_not_chunks(server, provider):
    null_delta = {
        "choices": [
            {
                "index": 0,
                "delta": {"content": None, "reasoning_content": None, "tool_calls": None},
                "finish_reason": None,
            }
        ]
    }
    server.script([null_delta, *text_chunks("x"), finish_chunk()])
    chunks = await collect(provider)
    assert chunks[:-1] == [TextChunk("x")]


async def test_usage_from_the_usage_chunk(server, provider):
    server.script([*text_chunks("Hi"), finish_chunk("stop"), usage_chunk(123, 45)])
    end = end_of(await collect(provider))
    assert end.usage == Usage(123, 45)
    assert end.finish_reason == "stop"


async def test_no_usage_chunk_means_zero_usage(server, provider):
    server.script([*text_chunks("Hi"), finish_chunk("stop")])
    assert end_of(await collect(provider)).usage == Usage()


async def test_missing_tool_call_ids_are_generated_and_unique(server, provider):
    server.script(
        [
            *tool_call_chunks(None, "bash", '{"command": "ls"}', index=0),
            *tool_call_chunks(None, "bash", '{"command": "pwd"}', index=1),
            finish_chunk("tool_calls"),
        ],
        [*tool_call_chunks(None, "bash", "{}"), finish_chunk("tool_calls")],
    )
    first = end_of(await collect(provider, TOOLS)).tool_calls
    second = end_of(await collect(provider, TOOLS)).tool_calls
    ids = [c.id for c in first + second]
    assert ids == ["call_0", "call_1", "call_2"]


async def test_tool_call_pieces_without_index(server, provider):
    """Some servers leave `index` out: a new id opens a call, a piece without one continues."""

    def piece(fn: dict, id: str | None = None) -> dict:
        tc: dict[str, Any] = {"function": fn}
        if id:
            tc["id"] = id
        return {"choices": [{"index": 0, "delta": {"tool_calls": [tc]}, "finish_reason": None}]}

    server.script(
        [
            piece({"name": "bash", "arguments": '{"command"'}, id="x1"),
            piece({"arguments": ': "ls"}'}),
            piece({"name": "read_file", "arguments": '{"path": "a"}'}, id="x2"),
            finish_chunk("tool_calls"),
        ]
    )
    end = end_of(await collect(provider, TOOLS))
    assert end.tool_calls == (
        ToolCall("x1", "bash", '{"command": "ls"}'),
        ToolCall("x2", "read_file", '{"path": "a"}'),
    )


async def test_whole_tool_call_in_one_piece_with_name_repeated(server, provider):
    """Ollama sends a call whole; some servers repeat the name in every piece."""
    piece = {"index": 0, "id": "o1", "function": {"name": "bash", "arguments": '{"command"'}}
    again = {"index": 0, "function": {"name": "bash", "arguments": ': "ls"}'}}
    server.script(
        [
            {"choices": [{"index": 0, "delta": {"tool_calls": [piece]}}]},
            {"choices": [{"index": 0, "delta": {"tool_calls": [again]}}]},
            finish_chunk("tool_calls"),
        ]
    )
    end = end_of(await collect(provider, TOOLS))
    assert end.tool_calls == (ToolCall("o1", "bash", '{"command": "ls"}'),)


# --------------------------------------------------------------------------- SSE framing


def sse_bytes(chunks: list, crlf: bool = False) -> bytes:
    return b"".join(encode_sse(chunks, crlf=crlf))


async def test_crlf_line_ends_and_keep_alive_comments(server, provider):
    events = encode_sse(
        [role_chunk(), *text_chunks("Hello world", split=3), finish_chunk(), usage_chunk(7, 3)],
        crlf=True,
    )
    data = b": keep-alive\r\n\r\n".join(events)
    # Cut in every awkward place: between CR and LF, inside "data:", inside the JSON.
    cuts = [i + 1 for i, b in enumerate(data) if b == ord("\r")] + [3, 40, 41, 90]
    server.script(Raw(split_bytes(b": hello\r\n\r\n" + data, cuts), delay=0.001))
    chunks = await collect(provider)
    assert [c.text for c in chunks if isinstance(c, TextChunk)] == ["Hel", "lo ", "wor", "ld"]
    end = end_of(chunks)
    assert end.usage == Usage(7, 3)
    assert end.finish_reason == "stop"


async def test_lone_cr_line_ends(server, provider):
    data = sse_bytes([*text_chunks("ab", split=1), finish_chunk()]).replace(b"\n", b"\r")
    server.script(Raw(split_bytes(data, range(0, len(data), 7)), delay=0.001))
    chunks = await collect(provider)
    assert text_of(chunks) == "ab"
    assert end_of(chunks).finish_reason == "stop"


async def test_utf8_characters_split_across_writes(server, provider):
    text = "héllo wörld — 日本語 🙂"
    data = sse_bytes([*text_chunks(text, split=4), finish_chunk()])
    # Cut inside every multi-byte character: after its first byte.
    cuts = [i + 1 for i, b in enumerate(data) if b >= 0xC0]
    server.script(Raw(split_bytes(data, cuts), delay=0.002))
    chunks = await collect(provider)
    assert text_of(chunks) == text
    assert "\ufffd" not in text_of(chunks)


async def test_event_split_in_the_middle_of_its_json(server, provider):
    data = sse_bytes([*text_chunks("one two", split=4), finish_chunk()])
    server.script(Raw(split_bytes(data, range(5, len(data), 11)), delay=0.001))
    chunks = await collect(provider)
    assert [c.text for c in chunks if isinstance(c, TextChunk)] == ["one ", "two"]


async def test_multi_line_data_event(server, provider):
    obj = json.dumps(text_chunks("multi")[0], indent=1)
    event = "".join(f"data: {line}\n" for line in obj.splitlines()) + "\n"
    data = event.encode() + sse_bytes([*text_chunks(" line"), finish_chunk()])
    server.script(Raw(data))
    chunks = await collect(provider)
    assert text_of(chunks) == "multi line"


async def test_events_without_blank_lines_between_them(server, provider):
    data = sse_bytes([*text_chunks("abc", split=1), finish_chunk()]).replace(b"\n\n", b"\n")
    server.script(Raw(data))
    chunks = await collect(provider)
    assert text_of(chunks) == "abc"
    assert end_of(chunks).finish_reason == "stop"


async def test_data_without_space_after_colon(server, provider):
    data = sse_bytes([*text_chunks("abc", split=1), finish_chunk()]).replace(b"data: ", b"data:")
    server.script(Raw(data))
    assert text_of(await collect(provider)) == "abc"


async def test_malformed_event_lines_are_skipped(server, provider):
    good = encode_sse([*text_chunks("Hello", split=2), finish_chunk("tool_calls")], done=False)
    truncated_call = (
        b'data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, '
        b'"id": "bad", "function": {"name": "bash", "arguments": "{\\"comm\n\n'
    )
    data = (
        good[0]
        + b"data: {not json at all\n\n"
        + good[1]
        + truncated_call
        + b"data: \xff\xfe garbage\n\n"
        + b"data: 42\n\n"
        + b'data: {"choices": "nope"}\n\n'
        + b"event: ping\n\n"
        + b"data:\n\n"
        + b"".join(good[2:])
        + b"data: [DONE]\n\n"
    )
    server.script(Raw(data))
    chunks = await collect(provider, TOOLS)
    assert text_of(chunks) == "Hello"
    assert not any(isinstance(c, ToolCallChunk) for c in chunks)
    assert end_of(chunks).tool_calls == ()  # never invented from a broken event


async def test_malformed_line_on_a_server_without_blank_lines(server, provider):
    data = (
        b"".join(encode_sse(text_chunks("ab", split=1), done=False)).replace(b"\n\n", b"\n")
        + b"data: {broken\n"
        + sse_bytes([*text_chunks("cd", split=1), finish_chunk()]).replace(b"\n\n", b"\n")
    )
    server.script(Raw(data))
    assert text_of(await collect(provider)) == "abcd"


async def test_finish_reason_without_done_is_a_whole_answer(server, provider):
    server.script(SSE([*text_chunks("done"), finish_chunk("stop")], done=False, chunked=False))
    chunks = await collect(provider)
    assert text_of(chunks) == "done"
    assert end_of(chunks).finish_reason == "stop"


async def test_done_without_finish_reason_is_a_whole_answer(server, provider):
    server.script([*text_chunks("done")])
    chunks = await collect(provider)
    assert text_of(chunks) == "done"
    assert end_of(chunks).finish_reason is None


async def test_error_event_inside_the_stream(server, provider):
    server.script(
        [*text_chunks("partial"), {"error": {"message": "context length exceeded"}}], Reply("x")
    )
    with pytest.raises(ModelError) as err:
        await collect(provider)
    assert "context length exceeded" in err.value.message
    assert err.value.after_tokens
    assert len(server.requests) == 1


async def test_json_answer_to_a_streamed_request(server, provider):
    """A server that ignores `stream: true` answers with one JSON completion."""
    server.script(Completion("whole", tool_calls=[call("bash", {"command": "ls"}, id="j1")]))
    chunks = await collect(provider, TOOLS)
    assert text_of(chunks) == "whole"
    assert end_of(chunks).tool_calls == (ToolCall("j1", "bash", '{"command": "ls"}'),)


async def test_a_body_that_is_not_sse_is_a_clear_error(server, provider):
    server.script(
        Raw(b"<html><body>It works!</body></html>", headers={"Content-Type": "text/html"})
    )
    with pytest.raises(ModelError) as err:
        await collect(provider)
    assert "did not answer with server-sent events" in err.value.message
    assert "It works!" in err.value.message


# --------------------------------------------------------------------------- retries, errors


async def test_500_then_success_is_retried(server, provider):
    server.script(Error(500, "model loading"), Reply("after retry"))
    chunks = await collect(provider)
    assert text_of(chunks) == "after retry"
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body


async def test_429_with_retry_after_is_honoured(server, provider):
    server.script(Error(429, "slow down", headers={"Retry-After": "1"}), Reply("ok then"))
    provider.sleep = waits = Waits()
    chunks = await collect(provider)
    assert waits.asked == [1.0]
    assert text_of(chunks) == "ok then"
    assert len(server.requests) == 2


async def test_retry_after_is_capped(server):
    waits = Waits()
    p = OpenAIProvider(server.base_url, "m", backoff=0.01, max_retry_after=0.05, sleep=waits)
    server.script(Error(429, headers={"Retry-After": "3600"}), Reply("soon"))
    chunks = await collect(p)
    await p.aclose()
    assert waits.asked == [0.05]
    assert text_of(chunks) == "soon"


async def test_5xx_gives_up_after_the_retries(server, provider):
    server.script(*[Error(503, "overloaded")] * 10)
    with pytest.raises(ModelError) as err:
        await collect(provider)
    assert err.value.status == 503
    assert "overloaded" in err.value.message
    assert "gave up after 4 tries" in err.value.message
    assert not err.value.after_tokens
    assert len(server.requests) == 4  # retries=3


async def test_401_is_not_retried_and_carries_the_servers_message(server, provider):
    server.script(Error(401, "Invalid API key: sk-...xyz"), Reply("never"))
    with pytest.raises(ModelError) as err:
        await collect(provider)
    assert err.value.status == 401
    assert "Invalid API key: sk-...xyz" in err.value.message
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("status", "body", "said"),
    [
        (400, {"error": {"message": "tools are not supported"}}, "tools are not supported"),
        (404, {"error": "model 'qwen' not found"}, "model 'qwen' not found"),
        (413, "Request Entity Too Large", "Request Entity Too Large"),
        (422, {"detail": "messages: field required"}, "messages: field required"),
    ],
)
async def test_other_client_errors_are_not_retried(server, provider, status, body, said):
    server.script(Error(status, body=body), Reply("never"))
    with pytest.raises(ModelError) as err:
        await collect(provider)
    assert err.value.status == status
    assert said in err.value.message
    assert len(server.requests) == 1


@pytest.mark.parametrize("chunked", [True, False])
async def test_stream_dropped_in_the_middle(server, provider, chunked):
    server.script(
        drop_after(4, [role_chunk(), *text_chunks("Hello world", split=2)], chunked=chunked),
        Reply("never"),
    )
    got: list = []
    with pytest.raises(ModelError) as err:
        await collect(provider, into=got)
    assert err.value.after_tokens is True
    assert "closed the stream in the middle of the answer" in err.value.message
    assert text_of(got) == "Hello "
    assert len(server.requests) == 1  # not retried: the person saw part of the answer


async def test_drop_before_the_first_token_is_retried(server, provider):
    server.script(drop_after(1, [role_chunk(), *text_chunks("never")]), Reply("second try"))
    chunks = await collect(provider)
    assert text_of(chunks) == "second try"
    assert len(server.requests) == 2


@pytest.mark.parametrize("after", [0, 2])
async def test_silent_server_does_not_block_cancellation(server, provider, after):
    server.script(silence_after(after, [role_chunk(), *text_chunks("abc", split=1)]))
    got: list = []
    # wait_for waits for the cancelled stream to end: a provider that blocked the cancel
    # would hang here on a server that never speaks again
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(collect(provider, into=got), 0.3)
    assert text_of(got) == ("a" if after == 2 else "")
    # The provider is still usable after the cancelled stream.
    server.script(Reply("fine"))
    assert text_of(await collect(provider)) == "fine"


async def test_consumer_stopping_early_leaves_the_provider_usable(server, provider):
    server.script(SSE(text_chunks("a b c d e f", split=1), delay=0.01), Reply("next"))
    with_stream = provider.stream(MESSAGES, [])
    first = await anext(with_stream)
    assert first == TextChunk("a")
    await with_stream.aclose()
    assert text_of(await collect(provider)) == "next"


async def test_stopping_early_with_tools_leaves_the_provider_usable(server, provider):
    # the rest of the first answer would take 5 x 60 s, past the test's timeout: the next
    # one comes without it
    server.script(SSE(text_chunks("a b c d e f", split=1), delay=60.0), Reply("next"))
    with_tools = provider.stream(MESSAGES, TOOLS)
    assert await anext(with_tools) == TextChunk("a")
    assert provider.paced is not None
    first = provider.paced.streams[-1].get_extra_info("socket")
    await with_tools.aclose()
    assert first.fileno() == -1  # the abandoned answer's connection is closed, not kept
    assert text_of(await collect(provider, TOOLS)) == "next"
    assert server.connections_made == 2


async def test_a_server_that_refuses_stream_options_is_asked_again_without(server, provider):
    refusal = {"error": {"message": "stream_options: Extra inputs are not permitted"}}
    server.script(Error(400, body=refusal), Reply("fine"), Reply("again"))
    assert text_of(await collect(provider)) == "fine"
    assert text_of(await collect(provider)) == "again"
    assert ["stream_options" in r for r in server.requests] == [True, False, False]


async def test_connection_refused_names_the_url_and_the_way_out():
    url = closed_port_url()
    p = OpenAIProvider(url, "m", retries=1, backoff=0.01)
    with pytest.raises(ModelError) as err:
        await collect(p)
    await p.aclose()
    msg = err.value.message
    assert url in msg
    assert "connection refused" in msg
    assert "--base-url" in msg
    assert "baseUrl" in msg
    assert "gave up after 2 tries" in msg
    assert not err.value.after_tokens


# --------------------------------------------------------------------------- llama.cpp quirk


async def test_tools_go_with_tool_choice_auto_and_none_without_tools(server, provider):
    # llama-cpp-python's chatml-function-calling format drops the tools from the prompt unless
    # tool_choice is given; "auto" is what OpenAI assumes when it is not.
    server.script(Reply("with"), Reply("without"))
    await collect(provider, TOOLS)
    await collect(provider)
    with_tools, without = server.requests
    assert with_tools["tool_choice"] == "auto" and with_tools["tools"] == TOOLS
    assert "tool_choice" not in without and "tools" not in without


async def test_a_server_that_refuses_tool_choice_is_asked_again_without(server, provider):
    refusal = {"error": {"message": "tool_choice: Extra inputs are not permitted"}}
    server.script(
        Error(400, body=refusal),
        Reply(tool_calls=[call("bash", {"command": "ls"}, id="c1")]),
        EmptyBody(),
        Completion("non-streamed, still without it"),
    )
    chunks = await collect(provider, TOOLS)
    assert end_of(chunks).tool_calls == (ToolCall("c1", "bash", '{"command": "ls"}'),)
    assert text_of(await collect(provider, TOOLS)) == "non-streamed, still without it"
    assert ["tool_choice" in r for r in server.requests] == [True, False, False, False]
    assert all(r["tools"] == TOOLS for r in server.requests)


async def test_the_non_streamed_request_drops_a_refused_tool_choice_too(server, provider):
    refusal = {"error": {"message": "tool_choice is not supported"}}
    server.script(EmptyBody(), Error(400, body=refusal), Completion("answered"))
    assert text_of(await collect(provider, TOOLS)) == "answered"
    assert [(r.stream, "tool_choice" in r) for r in server.requests] == [
        (True, True),
        (False, True),
        (False, False),
    ]


async def test_an_empty_answer_with_tools_is_asked_again_with_tool_choice_none(server, provider):
    # llama-cpp-python's text answers under tool_choice "auto" come out empty (its grammar lets
    # the model write a function name or stop, nothing else); under "none" the model speaks.
    server.script(Reply("", usage=(40, 2)), Reply("Paris is the capital.", usage=(30, 6)))
    chunks = await collect(provider, TOOLS)
    assert text_of(chunks) == "Paris is the capital."
    assert len([c for c in chunks if isinstance(c, TextChunk)]) > 1  # still streamed
    assert end_of(chunks) == StreamEnd("stop", (), Usage(70, 8))
    first, again = server.requests
    assert (first["tool_choice"], again["tool_choice"]) == ("auto", "none")
    assert again.stream and again["tools"] == TOOLS and again["messages"] == first["messages"]


async def test_the_second_ask_follows_the_remembered_fallback(server, provider):
    # After an empty 200, "auto" requests go non-streamed; "none" ones still stream.
    server.script(
        EmptyBody(),
        Completion(None, tool_calls=[call("bash", {"command": "ls"}, id="c1")]),
        Completion(""),
        Reply("in words"),
    )
    assert end_of(await collect(provider, TOOLS)).tool_calls
    assert text_of(await collect(provider, TOOLS)) == "in words"
    assert [(r.stream, r["tool_choice"]) for r in server.requests] == [
        (True, "auto"),
        (False, "auto"),
        (False, "auto"),
        (True, "none"),
    ]


async def test_an_answer_with_something_in_it_is_never_asked_again(server, provider):
    server.script(
        Reply("", reasoning="thinking, then nothing"),
        Reply("", finish_reason="length"),
        Reply(""),  # without tools: an empty answer is the answer
    )
    assert reasoning_of(await collect(provider, TOOLS)) == "thinking, then nothing"
    assert end_of(await collect(provider, TOOLS)).finish_reason == "length"
    assert end_of(await collect(provider)).finish_reason == "stop"
    assert len(server.requests) == 3


async def test_an_assistant_message_without_content_is_sent_with_an_empty_one(server, provider):
    # llama-cpp-python refuses `content: null` (a 500 naming a validation error).
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "out"},
        {"role": "assistant", "content": None},
        {"role": "user", "content": "again"},
    ]
    server.script(Reply("ok"))
    async for _ in provider.stream(history, []):
        pass
    sent = server.requests[0].messages
    assert [m.get("content") for m in sent] == ["hi", "", "out", "", "again"]
    assert sent[1]["tool_calls"] == history[1]["tool_calls"]
    assert history[1]["content"] is None and history[3]["content"] is None  # not changed


async def test_the_body_is_the_history_encoded_once_per_message(server, provider):
    """Each message is encoded once and the body joined from the pieces: the next request's
    body holds the same bytes for the same messages, and any text survives (a lone surrogate
    from a model goes as an escape)."""
    history = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "ünï 🙂 \ud800 end"},
        {"role": "assistant", "content": None},
    ]
    server.script(Reply("one"), Reply("two"))
    async for _ in provider.stream(history, []):
        pass
    first = server.requests[0]
    assert first.headers["content-type"] == "application/json"
    assert first.body["model"] == provider.model and first.body["stream"] is True
    assert [m["content"] for m in first.messages] == ["s", "ünï 🙂 \ud800 end", ""]
    history.append({"role": "user", "content": "more"})
    async for _ in provider.stream(history, []):
        pass
    second = server.requests[1].raw
    pieces = first.raw[first.raw.index(b'"messages":[') :].removesuffix(b"]}")
    assert pieces in second  # the first request's messages, byte for byte
    assert json.loads(second)["messages"][-1] == {"role": "user", "content": "more"}


async def test_empty_200_falls_back_to_non_streaming_once_and_remembers(server, provider):
    server.script(
        EmptyBody(),
        Completion(
            "Reading it.",
            tool_calls=[call("read_file", {"path": "a.py"}, id="r1")],
            reasoning="need the file",
            usage=(50, 9),
        ),
        Completion("second", tool_calls=[call("bash", {"command": "ls"}, id="r2")]),
        Reply("plain stream"),
    )
    chunks = await collect(provider, TOOLS)
    assert chunks == [
        ReasoningChunk("need the file"),
        TextChunk("Reading it."),
        ToolCallChunk(0, "read_file", '{"path": "a.py"}'),
        StreamEnd("tool_calls", (ToolCall("r1", "read_file", '{"path": "a.py"}'),), Usage(50, 9)),
    ]
    first, retry = server.requests
    assert first.stream and first["tools"] == TOOLS
    assert retry["stream"] is False
    assert "stream_options" not in retry
    assert retry["tools"] == TOOLS and retry["messages"] == first["messages"]

    # Remembered: the next request with tools goes non-streamed directly.
    chunks = await collect(provider, TOOLS)
    assert end_of(chunks).tool_calls == (ToolCall("r2", "bash", '{"command": "ls"}'),)
    assert len(server.requests) == 3
    assert server.requests[2]["stream"] is False

    # A request without tools still streams.
    assert text_of(await collect(provider)) == "plain stream"
    assert server.requests[3]["stream"] is True


async def test_the_connection_closed_after_the_empty_200_costs_no_wait(server):
    # llama-cpp-python closes the connection of its empty 200 although it said keep-alive; the
    # non-streamed request sent on it fails at once, and goes again at once on a new one.
    waits = Waits()
    provider = OpenAIProvider(server.base_url, "m", retries=3, backoff=5.0, sleep=waits)
    server.script(EmptyBody(chunked=True, then_close=True), Completion("fallback"))
    assert text_of(await collect(provider, TOOLS)) == "fallback"
    assert waits.asked == []  # the 5 s backoff was not waited
    assert [r.stream for r in server.requests] == [True, False]
    await provider.aclose()


async def test_empty_chunked_200_also_falls_back(server, provider):
    server.script(EmptyBody(chunked=True), Completion("fallback"))
    assert text_of(await collect(provider, TOOLS)) == "fallback"
    assert [r.stream for r in server.requests] == [True, False]


async def test_non_streamed_fallback_is_retried_too(server, provider):
    server.script(EmptyBody(), Error(502, "bad gateway"), Completion("at last"))
    assert text_of(await collect(provider, TOOLS)) == "at last"
    assert [r.stream for r in server.requests] == [True, False, False]


async def test_an_empty_200_after_a_cut_stream_falls_back_too(server, provider):
    """The retry of a stream cut before any text is an empty 200: the fallback asks with the
    request's own tool_choice (before the parser was split, its loop variable took that name,
    and this ended in a TypeError)."""
    server.script(SSE([role_chunk()], done=False), EmptyBody(), Completion("at last"))
    assert text_of(await collect(provider, TOOLS)) == "at last"
    assert [r.stream for r in server.requests] == [True, True, False]
    assert server.requests[2]["tool_choice"] == "auto"


# --------------------------------------------------------------------------- detection


async def test_detection_finds_the_scripted_server_and_skips_a_closed_port():
    with (
        ScriptedServer(models=["qwen3:8b", "llama3.2"]) as local,
        ScriptedServer(models=["gpt-x"]) as remote,
    ):
        presets = [
            Preset("Closed", closed_port_url()),
            Preset("Scripted", local.base_url + "/"),
            Preset("Remote", remote.base_url, local=False),
        ]
        found = await detect_local_server(timeout=0.5, presets=presets)
        assert found == DetectedServer("Scripted", local.base_url, ("qwen3:8b", "llama3.2"))
        assert found.model == "qwen3:8b"
        assert remote.models_requests == 0  # not a local preset: never probed


async def test_detection_prefers_table_order_over_speed():
    with (
        ScriptedServer(models=["slow"], models_delay=0.2) as slow,
        ScriptedServer(models=["fast"]) as fast,
    ):
        presets = [Preset("Slow", slow.base_url), Preset("Fast", fast.base_url)]
        found = await detect_local_server(timeout=1.0, presets=presets)
        assert found is not None and found.name == "Slow"


async def test_detection_gives_none_and_is_quick_when_nothing_answers():
    with ScriptedServer(models=None) as not_openai:  # answers 404 on /models
        presets = [
            Preset("Closed", closed_port_url()),
            Preset("Web app", not_openai.base_url),
            Preset("Also closed", closed_port_url("/engines/v1")),
        ]
        # refused and answered at once: a detection that waited out its hour would time out
        assert await detect_local_server(timeout=3600, presets=presets) is None
        assert not_openai.models_requests == 0


async def test_detection_times_out_on_a_silent_port():
    import socket

    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        with ScriptedServer() as good:
            presets = [Preset("Silent", url), Preset("Good", good.base_url)]
            # the silent port first, in table order: without the timeout, never "Good"
            found = await detect_local_server(timeout=0.3, presets=presets)
            assert found is not None and found.name == "Good"


def test_presets_are_the_usual_local_servers():
    table = {p.name: (p.base_url, p.local) for p in PRESETS}
    assert table == {
        "Ollama": ("http://localhost:11434/v1", True),
        "Docker Model Runner": ("http://localhost:12434/engines/v1", True),
        "llama.cpp": ("http://localhost:8080/v1", True),
        "LM Studio": ("http://localhost:1234/v1", True),
        "vLLM": ("http://localhost:8000/v1", True),
        "OpenAI": ("https://api.openai.com/v1", False),
    }
    assert [p.name for p in PRESETS][0] == "Ollama"


def test_provider_names_and_preset_lookup():
    assert provider_name("http://127.0.0.1:11434/v1") == "Ollama"
    assert provider_name("http://localhost:1234/v1/") == "LM Studio"
    assert provider_name("https://api.openai.com/v1") == "OpenAI"
    assert provider_name("http://gpu-box:9000/v1") == "gpu-box"
    assert find_preset("lm studio").base_url == "http://localhost:1234/v1"
    assert find_preset("ollama").name == "Ollama"
    assert find_preset("nothing") is None
    assert OpenAIProvider("http://localhost:8080/v1", "m").provider == "llama.cpp"
    assert OpenAIProvider("http://localhost:8080/v1", "m", "mine").provider == "mine"


async def test_list_models(server):
    assert await list_models(server.base_url) == ["scripted-model"]
    with pytest.raises(ModelError) as err:
        await list_models(closed_port_url())
    assert "connection refused" in err.value.message


# --------------------------------------------------------------------------- the scripted server


async def test_scripted_conversation_adapts_to_the_stream_flag():
    with ScriptedServer.conversation(
        Reply(tool_calls=[call("bash", {"command": "ls"}, id="t1")]),
        Reply("two files"),
    ) as server:
        p = OpenAIProvider(server.base_url, "m", backoff=0.01)
        first = end_of(await collect(p, TOOLS))
        assert first.tool_calls == (ToolCall("t1", "bash", '{"command": "ls"}'),)
        assert text_of(await collect(p, TOOLS)) == "two files"
        assert text_of(await collect(p)) == "ok"  # the script is used up
        await p.aclose()
        assert server.pending == 0
        assert len(server.wait_for_requests(3, timeout=1)) == 3


def test_scripted_server_answers_another_process():
    """The shape of the `mm -p` tests: the server in this process, the client in a child."""
    child = (
        "import asyncio, sys\n"
        "from mm_tui.engine.provider import OpenAIProvider\n"
        "async def main():\n"
        "    p = OpenAIProvider(sys.argv[1], 'm', retries=0)\n"
        "    async for c in p.stream([{'role': 'user', 'content': 'hi'}], []):\n"
        "        print(type(c).__name__, getattr(c, 'text', ''), flush=True)\n"
        "    await p.aclose()\n"
        "asyncio.run(main())\n"
    )
    with ScriptedServer(Reply("from the child", split=None)) as server:
        done = subprocess.run(
            [sys.executable, "-c", child, server.base_url],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == ["TextChunk from the child", "StreamEnd "]
        (req,) = server.wait_for_requests(1)
        assert req.messages == MESSAGES


# --------------------------------------------------------------------------- property


@pytest.fixture(scope="module")
def shared_server():
    with ScriptedServer() as s:
        yield s


VALID_STREAM = [
    role_chunk(),
    *reasoning_chunks("Think é 🙂", split=2),
    *text_chunks("Héllo — wörld\n", split=3),
    *interleave(
        tool_call_chunks("c0", "read_file", '{"path": "ä.py"}', split=3, index=0),
        tool_call_chunks("c1", "bash", '{"command": "echo ✓"}', split=4, index=1),
    ),
    finish_chunk("tool_calls"),
    usage_chunk(21, 13),
]


def _run(server: ScriptedServer, response: Raw) -> list:
    async def go() -> list:
        p = OpenAIProvider(server.base_url, "m", retries=0)
        try:
            server.script(response)
            return await collect(p, TOOLS)
        finally:
            await p.aclose()

    return asyncio.run(go())


_expected: dict[bool, list] = {}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cuts=st.lists(st.integers(min_value=1, max_value=4000), max_size=25),
    crlf=st.booleans(),
    comments=st.booleans(),
    junk=st.lists(st.binary(max_size=30).map(lambda b: b.translate(None, b"\r\n")), max_size=3),
)
def test_random_splits_give_the_same_chunks(shared_server, cuts, crlf, comments, junk):
    for j in junk:
        text = j.decode("utf-8", errors="replace")
        try:
            json.loads(text)
            assume(False)  # a junk line that happens to be JSON is not junk
        except ValueError:
            pass
        assume(text.strip() != "[DONE]")
    if crlf not in _expected:
        _expected[crlf] = _run(shared_server, Raw(sse_bytes(VALID_STREAM, crlf=crlf)))
        assert end_of(_expected[crlf]).tool_calls == (
            ToolCall("c0", "read_file", '{"path": "ä.py"}'),
            ToolCall("c1", "bash", '{"command": "echo ✓"}'),
        )
    nl = "\r\n" if crlf else "\n"
    events = encode_sse(VALID_STREAM, crlf=crlf)
    extra = [b"data: " + j + f"{nl}{nl}".encode() for j in junk]
    if comments:
        extra.append(f": keep-alive{nl}{nl}".encode())
    for i, e in enumerate(extra):
        events.insert(1 + (i * 7) % (len(events) - 1), e)
    data = b"".join(events)
    got = _run(shared_server, Raw(split_bytes(data, cuts), delay=0.001))
    assert joined(got) == joined(_expected[crlf])


def joined(chunks: list) -> list:
    """The chunks with each run of text (or of thought) as one: where a run is cut depends on
    the reads, which batch what arrived meanwhile (paced_reads.py), not on what was said."""
    out: list = []
    for chunk in chunks:
        kind = type(chunk)
        if out and kind in (TextChunk, ReasoningChunk) and type(out[-1]) is kind:
            out[-1] = kind(out[-1].text + chunk.text)
        else:
            out.append(chunk)
    return out


async def test_a_request_after_the_first_looks_for_no_module(server, provider):
    """Once the first request has loaded what the client needs, a request imports nothing:
    every import it makes is of a module already loaded. (httpcore imports sniffio at every
    lock it sets up; a missing one is searched for on sys.path each time, as Python does not
    remember a failed import: mm installs it.)"""

    class Looked:  # a finder first on sys.meta_path: Python asks it of every module not loaded
        def __init__(self) -> None:
            self.names: list[str] = []

        def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
            self.names.append(name)

    server.script(Reply("one"), Reply("two"), Reply("three"))
    async for _ in provider.stream([{"role": "user", "content": "hi"}], []):
        pass
    looked = Looked()
    sys.meta_path.insert(0, looked)
    try:
        for _ in range(2):
            async for _ in provider.stream([{"role": "user", "content": "hi"}], []):
                pass
    finally:
        sys.meta_path.remove(looked)
    assert len(server.requests) == 3
    assert looked.names == []
