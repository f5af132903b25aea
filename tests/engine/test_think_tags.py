"""Reasoning written into the answer's text as `<think>…</think>` (a server without a reasoning
parser): shown and kept as thinking, never as the answer (engine/think_tags.py, in the turn)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.engine import make_engine, of
from support.engine import turn as run
from support.scripted_server import Reply, ScriptedServer

from mm_tui.core.events import TextDelta, ThoughtDelta, TurnEnded
from mm_tui.engine.think_tags import ThinkSplitter


def split(pieces: list[str], opened: bool = False) -> list[tuple[bool, str]]:
    splitter = ThinkSplitter(opened)
    out = [piece for text in pieces for piece in splitter.feed(text)]
    out += splitter.finish()
    joined: list[tuple[bool, str]] = []
    for thinking, text in out:  # pieces of one kind joined, to compare what was said
        if joined and joined[-1][0] == thinking:
            joined[-1] = (thinking, joined[-1][1] + text)
        else:
            joined.append((thinking, text))
    return joined


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        (["<think>plan</think>\n\nHello"], [(True, "plan"), (False, "Hello")]),
        (["<th", "ink>pl", "an</thi", "nk>Hi"], [(True, "plan"), (False, "Hi")]),
        (["\n  <think>a</think>b"], [(True, "a"), (False, "b")]),
        (["Hello <think>x</think>"], [(False, "Hello <think>x</think>")]),  # not at the start
        (["<b>bold</b>"], [(False, "<b>bold</b>")]),
        (["<"], [(False, "<")]),  # the reply ended before it could tell
        (["<think>never closed"], [(True, "never closed")]),
        (["<think>a</thin"], [(True, "a</thin")]),
    ],
)
def test_a_reply_that_opens_with_think_is_thinking_until_it_closes(
    pieces: list[str], expected: list[tuple[bool, str]]
) -> None:
    assert split(pieces) == expected


def test_a_template_that_opened_the_tag_itself() -> None:
    assert split(["plan", " more</think>Answer"], opened=True) == [
        (True, "plan more"),
        (False, "Answer"),
    ]
    # no closing tag at all: the text was the answer after all, given again as the answer
    assert split(["just an answer"], opened=True) == [
        (True, "just an answer"),
        (False, "just an answer"),
    ]


async def test_think_tags_in_the_content_are_thinking_in_the_turn(tmp_path: Path) -> None:
    reply = "<think>The person greets me.</think>\n\nHello there."
    with ScriptedServer() as server:
        server.script(Reply(reply, split=4), Reply("Again."))
        engine = make_engine(tmp_path, server)
        events = await run(engine, "hi")
        await run(engine, "again")
        sent = server.wait_for_requests(2)[1].messages
    end = [e for e in events if isinstance(e, TurnEnded)][0]
    assert end.stop_reason == "end_turn"
    assert "".join(e.text for e in of(events, TextDelta)) == "Hello there."
    assert "".join(e.text for e in of(events, ThoughtDelta)) == "The person greets me."
    # the next request carries the answer, not the thinking
    assert [m["content"] for m in sent if m["role"] == "assistant"] == ["Hello there."]
