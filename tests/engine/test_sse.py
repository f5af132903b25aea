"""The SSE decoder without a socket: bytes in, however the network cuts them, JSON objects out."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from support.scripted_server import (
    encode_sse,
    split_bytes,
)
from test_provider import VALID_STREAM as PROVIDER_STREAM

from mm_tui.engine.sse import LineSplitter, SseDecoder


def lines_of(*reads: bytes) -> list[str]:
    splitter = LineSplitter()
    out = []
    for raw in reads:
        out += splitter.feed(raw)
    return out + splitter.close()


def decode(*reads: bytes) -> tuple[list[dict[str, Any]], SseDecoder]:
    sse = SseDecoder()
    out: list[dict[str, Any]] = []
    for raw in reads:
        out += sse.feed(raw)
        if sse.done:
            return out, sse
    out += sse.close()
    return out, sse


def objects(*reads: bytes) -> list[dict[str, Any]]:
    return decode(*reads)[0]


# --------------------------------------------------------------------------- lines


def test_lf_crlf_and_lone_cr_all_end_a_line():
    assert lines_of(b"a\nb\r\nc\rd\n") == ["a", "b", "c", "d", ""]


def test_a_crlf_split_across_reads_is_one_line_end():
    assert lines_of(b"a\r", b"\nb\r", b"\n") == ["a", "b", ""]
    assert lines_of(b"a\r", b"\n", b"b\n") == ["a", "b", ""]


def test_a_cr_at_the_end_of_a_read_then_another_line():
    assert lines_of(b"a\r", b"b\r\n\r\n") == ["a", "b", "", ""]


def test_a_character_split_across_reads_arrives_whole():
    data = "é🙂".encode()
    assert lines_of(*(data[i : i + 1] for i in range(len(data))), b"\n") == ["é🙂", ""]


def test_bytes_that_are_not_utf8_become_replacement_characters():
    assert lines_of(b"a\xff\n") == ["a\ufffd", ""]
    assert lines_of(b"a\xc3") == ["a\ufffd", ""]  # cut inside a character at the very end


def test_close_flushes_the_last_line_and_ends_the_event():
    assert lines_of(b"data: 1") == ["data: 1", ""]
    assert lines_of() == [""]


def test_a_line_is_given_once_it_is_complete():
    splitter = LineSplitter()
    assert splitter.feed(b"da") == []
    assert splitter.feed(b"ta: x") == []
    assert splitter.feed(b"\nnext") == ["data: x"]
    assert splitter.close() == ["next", ""]


# --------------------------------------------------------------------------- events


def test_events_are_objects_up_to_done():
    got, sse = decode(b'data: {"a": 1}\n\ndata: {"b": 2}\n\ndata: [DONE]\n\ndata: {"c": 3}\n\n')
    assert got == [{"a": 1}, {"b": 2}]
    assert sse.done and sse.seen_data and sse.stray is None


def test_nothing_is_decoded_after_done():
    sse = SseDecoder()
    assert list(sse.feed(b"data: [DONE]\n\n")) == []
    assert sse.done
    assert list(sse.feed(b'data: {"a": 1}\n\n')) == []
    assert list(sse.close()) == []


def test_done_with_spaces_and_crlf():
    got, sse = decode(b'data: {"a": 1}\r\n\r\ndata:  [DONE] \r\n\r\n')
    assert got == [{"a": 1}] and sse.done


def test_comments_are_ignored_and_are_not_stray():
    got, sse = decode(b': keep-alive\n\ndata: {"a": 1}\n\n:\n\n')
    assert got == [{"a": 1}]
    assert sse.stray is None


def test_data_without_space_after_the_colon():
    assert objects(b'data:{"a": 1}\n\n') == [{"a": 1}]


def test_multi_line_data_event():
    assert objects(b'data: {"a":\ndata:  1,\ndata: "b": 2}\n\n') == [{"a": 1, "b": 2}]


def test_events_without_blank_lines_between_them():
    assert objects(b'data: {"a": 1}\ndata: {"b": 2}\ndata: [DONE]\n') == [{"a": 1}, {"b": 2}]


def test_a_malformed_event_is_dropped_at_its_blank_line():
    got = objects(b'data: {"a": 1}\n\ndata: {broken\n\ndata: {"b": 2}\n\n')
    assert got == [{"a": 1}, {"b": 2}]


def test_a_malformed_line_on_a_server_without_blank_lines():
    got = objects(b'data: {"a": 1}\ndata: {broken\ndata: {"b": 2}\ndata: [DONE]\n')
    assert got == [{"a": 1}, {"b": 2}]


def test_done_after_a_malformed_line():
    got, sse = decode(b"data: {broken\ndata: [DONE]\n")
    assert got == [] and sse.done


def test_values_that_are_not_objects_are_dropped():
    assert objects(b'data: 42\n\ndata: "x"\n\ndata: [1]\n\ndata: null\n\ndata: {"a": 1}\n\n') == [
        {"a": 1}
    ]


def test_an_empty_data_line_is_data_but_no_object():
    got, sse = decode(b"data:\n\n")
    assert got == [] and sse.seen_data and not sse.done


def test_the_last_event_without_its_line_end():
    assert objects(b'data: {"a": 1}') == [{"a": 1}]


def test_the_first_line_that_is_not_sse_is_kept():
    got, sse = decode(b"<html>\nIt works!\n</html>\n")
    assert got == [] and not sse.seen_data
    assert sse.stray == "<html>"


def test_event_fields_are_stray_but_harmless():
    got, sse = decode(b'event: ping\nid: 1\n\ndata: {"a": 1}\n\n')
    assert got == [{"a": 1}]
    assert sse.stray == "event: ping"


def test_an_empty_answer_has_no_data():
    got, sse = decode(b"")
    assert got == [] and not sse.seen_data and not sse.done and sse.stray is None


def test_the_objects_come_as_each_read_completes_them():
    sse = SseDecoder()
    assert list(sse.feed(b'data: {"a"')) == []
    assert list(sse.feed(b': 1}\n\ndata: {"b": 2}')) == [{"a": 1}]
    assert list(sse.feed(b"\n\n")) == [{"b": 2}]


# --------------------------------------------------------------------------- property

VALID_STREAM = PROVIDER_STREAM  # the provider's property test decodes the same stream
EXPECTED = [json.loads(e[len(b"data: ") :]) for e in encode_sse(VALID_STREAM, done=False)]


def stream_bytes(line_end: str, comments: bool, blank_lines: bool) -> bytes:
    events = encode_sse(VALID_STREAM)
    if comments:
        events = [e for event in events for e in (b": keep-alive\n\n", event)]
    data = b"".join(events)
    if not blank_lines:
        data = data.replace(b"\n\n", b"\n")
    return data.replace(b"\n", line_end.encode())


@given(
    cuts=st.lists(st.integers(min_value=0, max_value=6000), max_size=40),
    line_end=st.sampled_from(["\n", "\r\n", "\r"]),
    comments=st.booleans(),
    blank_lines=st.booleans(),
)
def test_any_split_of_a_valid_stream_gives_the_same_objects(cuts, line_end, comments, blank_lines):
    data = stream_bytes(line_end, comments, blank_lines)
    whole, sse = decode(data)
    assert whole == EXPECTED and sse.done
    assert objects(*split_bytes(data, cuts)) == whole


@given(cuts=st.lists(st.integers(min_value=0, max_value=6000), max_size=40))
def test_any_split_into_single_bytes_or_more(cuts):
    data = stream_bytes("\r\n", True, True)
    pieces = split_bytes(data, [*cuts, *range(0, len(data), 97)])
    assert objects(*pieces) == EXPECTED
