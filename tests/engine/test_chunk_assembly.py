"""The chunk assembler without a socket: chat-completions objects in, chunks and the end out."""

from __future__ import annotations

import itertools
import json
from dataclasses import FrozenInstanceError
from typing import Any

import pytest
from support.scripted_server import (
    chunk,
    finish_chunk,
    interleave,
    reasoning_chunks,
    role_chunk,
    text_chunks,
    tool_call_chunks,
    usage_chunk,
)

from mm_tui.core.events import Usage
from mm_tui.engine.chunk_assembly import (
    CallSlots,
    ChunkAssembler,
    Replay,
    completion_chunks,
    merge_tool_piece,
)
from mm_tui.engine.model_stream import (
    CONTEXT_ADVICE,
    ReasoningChunk,
    StreamEnd,
    TextChunk,
    ToolCall,
    ToolCallChunk,
)


def ids() -> Any:
    """The provider's made-up call ids: call_0, call_1, ..."""
    counter = itertools.count()
    return lambda: f"call_{next(counter)}"


def assemble(*objs: dict[str, Any]) -> tuple[list[Any], StreamEnd]:
    answer = ChunkAssembler()
    chunks = answer.add(list(objs))
    assert answer.failure is None
    return chunks, answer.end(ids())


def pieces(*tool_calls: dict[str, Any]) -> dict[str, Any]:
    return chunk({"tool_calls": list(tool_calls)})


# --------------------------------------------------------------------------- text, reasoning


def test_text_deltas_are_text_chunks():
    answer = ChunkAssembler()
    chunks = [answer.add([obj]) for obj in (role_chunk(), *text_chunks("Hello world", split=5))]
    assert chunks == [[], [TextChunk("Hello")], [TextChunk(" worl")], [TextChunk("d")]]
    assert answer.add([finish_chunk()]) == []
    assert answer.end(ids()) == StreamEnd("stop", (), Usage())


def test_a_run_of_text_in_one_read_is_one_chunk():
    """The engine reads a trickling server in batches (paced_reads.py): a read's run of text
    deltas, or of thought deltas, crosses as one chunk, and what comes between them keeps its
    place."""
    chunks, end = assemble(role_chunk(), *text_chunks("Hello world", split=5), finish_chunk())
    assert chunks == [TextChunk("Hello world")]
    assert end == StreamEnd("stop", (), Usage())
    chunks, _ = assemble(
        *reasoning_chunks("hmm, yes", split=3),
        *text_chunks("One ", split=2),
        pieces({"index": 0, "id": "a", "function": {"name": "bash", "arguments": "{}"}}),
        *text_chunks("two", split=1),
    )
    assert chunks == [
        ReasoningChunk("hmm, yes"),
        TextChunk("One "),
        ToolCallChunk(0, "bash", "{}"),
        TextChunk("two"),
    ]


def test_a_joined_chunk_is_made_whole_and_never_changed():
    """A run's pieces are joined before its chunk is made: the chunk is a frozen one like any
    other, and a delta of thought and text after a run of text ends that run."""
    answer = ChunkAssembler()
    first = answer.add(
        [*text_chunks("Hello world", split=3), chunk({"reasoning": "hm", "content": "!"})]
    )
    assert first == [TextChunk("Hello world"), ReasoningChunk("hm"), TextChunk("!")]
    assert hash(first[0]) == hash(TextChunk("Hello world"))
    with pytest.raises(FrozenInstanceError):
        first[0].text = "changed"  # type: ignore[misc]
    assert answer.add(list(text_chunks("more", split=2))) == [TextChunk("more")]
    assert first[0] == TextChunk("Hello world")


def test_reasoning_under_either_name():
    for field in ("reasoning_content", "reasoning"):
        chunks, _ = assemble(*reasoning_chunks("hmm", field=field), *text_chunks("ok"))
        assert chunks == [ReasoningChunk("hmm"), TextChunk("ok")]


def test_reasoning_and_text_in_one_delta_reasoning_first():
    chunks, _ = assemble(chunk({"content": "b", "reasoning_content": "a"}))
    assert chunks == [ReasoningChunk("a"), TextChunk("b")]


def test_content_parts_become_text():
    chunks, _ = assemble(chunk({"content": [{"type": "text", "text": "a"}, "b", {"x": 1}]}))
    assert chunks == [TextChunk("ab")]


def test_null_and_empty_fields_are_not_chunks():
    chunks, end = assemble(
        chunk({"content": None, "reasoning_content": None, "tool_calls": None}),
        chunk({"content": ""}),
        chunk(None),
        finish_chunk(None),
    )
    assert chunks == [] and end == StreamEnd(None, (), Usage())


def test_the_text_shown_is_kept():
    answer = ChunkAssembler()
    answer.add([*reasoning_chunks("ab", split=1), *text_chunks("cd", split=1)])
    assert (answer.shown, answer.thought, answer.yielded) == (["c", "d"], ["a", "b"], True)


# --------------------------------------------------------------------------- tool calls


def test_interleaved_calls_end_in_index_order_with_cumulative_arguments():
    objs = interleave(
        tool_call_chunks("b", "read_file", '{"p": 1}', split=4, index=1),
        tool_call_chunks("a", "bash", '{"c": "ls"}', split=5, index=0),
    )
    chunks, end = assemble(*objs, finish_chunk("tool_calls"))
    assert ToolCallChunk(1, "read_file", "") in chunks
    assert [c for c in chunks if c.index == 0][-1] == ToolCallChunk(0, "bash", '{"c": "ls"}')
    assert [c for c in chunks if c.index == 1][-1] == ToolCallChunk(1, "read_file", '{"p": 1}')
    assert end.finish_reason == "tool_calls"
    assert end.tool_calls == (
        ToolCall("a", "bash", '{"c": "ls"}'),
        ToolCall("b", "read_file", '{"p": 1}'),
    )


def test_calls_without_ids_get_made_up_unique_ones():
    objs = [
        *tool_call_chunks(None, "bash", "{}", index=0),
        *tool_call_chunks(None, "bash", "{}", index=1),
    ]
    _, end = assemble(*objs)
    assert [c.id for c in end.tool_calls] == ["call_0", "call_1"]


def test_pieces_without_index():
    """A new id opens a call, a known id goes back to its call, no id continues the last."""
    _, end = assemble(
        pieces({"id": "x", "function": {"name": "bash", "arguments": '{"c"'}}),
        pieces({"function": {"arguments": ': "ls"}'}}),
        pieces({"id": "y", "function": {"name": "read_file", "arguments": "{"}}),
        pieces({"id": "x", "function": {"arguments": ""}}),
        pieces({"function": {"arguments": "}"}}),
    )
    assert end.tool_calls == (
        ToolCall("x", "bash", '{"c": "ls"}'),
        ToolCall("y", "read_file", "{}"),
    )


def test_the_whole_call_in_one_piece_with_the_name_repeated():
    whole = {"index": 0, "id": "o1", "function": {"name": "bash", "arguments": '{"c": 1}'}}
    again = {"index": 0, "function": {"name": "bash", "arguments": ""}}
    chunks, end = assemble(pieces(whole), pieces(again))
    assert chunks == [ToolCallChunk(0, "bash", '{"c": 1}')]
    assert end.tool_calls == (ToolCall("o1", "bash", '{"c": 1}'),)


def test_a_name_in_pieces_and_a_growing_name():
    _, end = assemble(
        pieces({"index": 0, "function": {"name": "read"}}),
        pieces({"index": 0, "function": {"name": "_file"}}),
        pieces({"index": 1, "function": {"name": "ba"}}),
        pieces({"index": 1, "function": {"name": "bash"}}),
    )
    assert [c.name for c in end.tool_calls] == ["read_file", "bash"]


def test_arguments_sent_as_an_object():
    _, end = assemble(pieces({"index": 0, "function": {"name": "bash", "arguments": {"c": 1}}}))
    assert end.tool_calls[0].arguments == json.dumps({"c": 1})


def test_a_call_without_a_name_is_dropped():
    chunks, end = assemble(pieces({"index": 0, "id": "n", "function": {"arguments": "{}"}}))
    assert chunks == [ToolCallChunk(0, "", "{}")]
    assert end.tool_calls == ()


def test_a_new_call_on_an_index_already_used_is_a_call_of_its_own():
    """Servers that send every call on index 0, each whole with its own id: two calls, in the
    order they came, each shown on a slot of its own; a piece after them goes to the last."""
    chunks, end = assemble(
        pieces({"index": 0, "id": "a", "function": {"name": "bash", "arguments": '{"c": 1}'}}),
        pieces({"index": 0, "id": "b", "function": {"name": "read_file", "arguments": '{"p"'}}),
        pieces({"index": 0, "function": {"arguments": ": 2}"}}),
        pieces({"index": 1, "id": "c", "function": {"name": "bash", "arguments": "{}"}}),
    )
    assert end.tool_calls == (
        ToolCall("a", "bash", '{"c": 1}'),
        ToolCall("b", "read_file", '{"p": 2}'),
        ToolCall("c", "bash", "{}"),
    )
    assert [c.index for c in chunks] == [0, 1, 1, 2]


def test_a_new_id_without_a_name_continues_the_call():
    """A server that sends an id in every piece, not always the same: no name, no new call."""
    _, end = assemble(
        pieces({"index": 0, "id": "a", "function": {"name": "bash", "arguments": '{"c"'}}),
        pieces({"index": 0, "id": "a2", "function": {"arguments": ": 1}"}}),
    )
    assert end.tool_calls == (ToolCall("a", "bash", '{"c": 1}'),)


def test_a_piece_that_changes_nothing_is_not_shown():
    calls = CallSlots()
    assert merge_tool_piece(calls, {"index": 0, "id": "a"}) is None  # no function
    assert merge_tool_piece(calls, {"index": 0, "function": {}}) is None
    assert merge_tool_piece(calls, "not a piece") is None
    assert merge_tool_piece(calls, {"index": 0, "function": {"name": "bash"}}) == ToolCallChunk(
        0, "bash", ""
    )
    assert merge_tool_piece(calls, {"index": 0, "function": {"name": "bash"}}) is None


# --------------------------------------------------------------------------- finish, usage


def test_usage_from_the_usage_chunk():
    _, end = assemble(*text_chunks("x"), finish_chunk(), usage_chunk(7, 3))
    assert end.usage == Usage(7, 3)


def test_malformed_usage_is_zero():
    _, end = assemble({"choices": [], "usage": {"prompt_tokens": "many"}})
    assert end.usage == Usage()


def test_the_finish_reason_of_a_chunk_with_text():
    _, end = assemble({"choices": [{"delta": {"content": "x"}, "finish_reason": "length"}]})
    assert end.finish_reason == "length"


def test_chunks_of_an_unexpected_shape_are_skipped():
    chunks, end = assemble(
        {"choices": "nope"},
        {"choices": [{"delta": ["x"]}]},
        {"choices": [{"delta": {"tool_calls": 5, "content": "a"}}]},
        *text_chunks("b"),
        {"nothing": "here"},
    )
    assert chunks == [TextChunk("ab")]  # one read: one chunk
    assert end == StreamEnd(None, (), Usage())


# --------------------------------------------------------------------------- errors


def test_an_error_event_stops_the_chunks_and_is_kept():
    answer = ChunkAssembler()
    chunks = answer.add(
        [*text_chunks("part"), {"error": {"message": "boom"}}, *text_chunks("after")]
    )
    assert chunks == [TextChunk("part")]
    error = answer.failure
    assert error is not None
    assert error.message == "the model server reported an error: boom"
    assert error.after_tokens and not error.overflow
    assert json.loads(error.server_text) == {"error": {"message": "boom"}}


def test_a_context_overflow_before_any_text_can_be_shrunk():
    answer = ChunkAssembler()
    assert answer.add([{"error": {"message": "maximum context length is 4096"}}]) == []
    error = answer.failure
    assert error is not None
    assert error.overflow and not error.after_tokens
    assert error.message.endswith(CONTEXT_ADVICE)


def test_an_overflow_after_text_of_an_earlier_read_is_not_shrunk():
    answer = ChunkAssembler()
    answer.add(text_chunks("x"))
    answer.add([{"error": "context window exceeded"}])
    assert answer.failure is not None
    assert answer.failure.after_tokens and not answer.failure.overflow


# --------------------------------------------------------------------------- retried answers


def test_a_retried_answer_does_not_show_again_what_was_shown():
    answer = ChunkAssembler()
    answer.add([*reasoning_chunks("think", split=2), *text_chunks("Hello", split=2)])
    answer.add(tool_call_chunks("a", "bash", '{"c": 1}', split=3)[:2])
    assert answer.calls
    answer.begin()  # the stream was cut in the call: asked again
    assert not answer.calls and not answer.yielded and answer.shown_any
    again = answer.add(
        [
            *reasoning_chunks("think", split=3),
            *text_chunks("Hello there", split=4),
            *tool_call_chunks("b", "bash", '{"c": 1}'),
        ]
    )
    # "Hell", "o th", "ere": what was shown is dropped, the rest goes on, as one chunk
    assert [c for c in again if not isinstance(c, ToolCallChunk)] == [TextChunk(" there")]
    assert answer.end(ids()).tool_calls == (ToolCall("b", "bash", '{"c": 1}'),)
    assert "".join(answer.shown) == "Hello there"


def test_a_retried_answer_that_departs_is_shown_from_where_it_departs():
    answer = ChunkAssembler()
    answer.add(text_chunks("Hello world"))
    answer.begin()
    assert answer.add(text_chunks("Help", split=2)) == [TextChunk("p")]
    assert answer.add(text_chunks("Hello")) == [TextChunk("Hello")]  # departed: all new


def test_replay_compares_text_and_reasoning_apart():
    replay = Replay("ab", "xy")
    assert replay.unseen(ReasoningChunk, "xyz") == "z"
    assert replay.unseen(TextChunk, "a") == ""
    assert replay.unseen(TextChunk, "bc") == "c"
    assert replay.unseen(TextChunk, "d") == "d"


# --------------------------------------------------------------------------- whole completions


def test_a_whole_completion_as_the_chunks_of_a_stream():
    data = {
        "choices": [
            {
                "finish_reason": "tool_calls",
                "message": {
                    "reasoning_content": "r",
                    "content": "t",
                    "tool_calls": [
                        {"id": "j1", "function": {"name": "bash", "arguments": "{}"}},
                        {"function": {"name": "read_file", "arguments": {"p": 1}}},
                        "junk",
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2},
    }
    assert completion_chunks(data, ids()) == [
        ReasoningChunk("r"),
        TextChunk("t"),
        ToolCallChunk(0, "bash", "{}"),
        ToolCallChunk(1, "read_file", '{"p": 1}'),
        StreamEnd(
            "tool_calls",
            (ToolCall("j1", "bash", "{}"), ToolCall("call_0", "read_file", '{"p": 1}')),
            Usage(5, 2),
        ),
    ]


def test_a_completion_without_choices_is_an_empty_end():
    assert completion_chunks({"choices": []}, ids()) == [StreamEnd(None, (), Usage())]
