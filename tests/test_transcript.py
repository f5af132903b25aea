"""The translation from engine events to the transcript store, without a terminal."""

from __future__ import annotations

from mm_tui.engine.events import (
    ComposingToolCall,
    Counters,
    EngineError,
    TextDelta,
    Thinking,
    ThoughtDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
    Usage,
)
from mm_tui.transcript import (
    AnswerItem,
    NoticeItem,
    RecapItem,
    ThoughtItem,
    ToolItem,
    Transcript,
    UserItem,
    transcript_from_messages,
)


def started(call_id: str = "c1", tool: str = "bash", title: str = "bash  ls") -> ToolCallStarted:
    return ToolCallStarted(call_id=call_id, tool=tool, title=title, kind="execute", arguments={})


def test_a_turn_becomes_items_in_order() -> None:
    t = Transcript(clock=lambda: 5.0)
    t.apply(TurnStarted(turn=1, text="hi"))
    assert t.state == "Thinking"
    t.apply(ThoughtDelta(text="hmm "))
    t.apply(ThoughtDelta(text="ok"))
    t.apply(ComposingToolCall(index=0, name="bash", chars=3))
    assert t.state == "Composing a tool call"
    t.apply(started())
    assert t.state == "Running"
    t.apply(ToolCallFinished(call_id="c1", tool="bash", status="ok", output="a\n", elapsed=0.5))
    t.apply(Thinking())
    t.apply(TextDelta(text="Done"))
    t.apply(TextDelta(text=" here."))
    t.apply(
        TurnEnded(
            turn=1,
            counters=Counters(commands=1),
            elapsed=1.25,
            usage=Usage(10, 5),
            stop_reason="end_turn",
        )
    )
    kinds = [type(i) for i in t.items]
    assert kinds == [UserItem, ThoughtItem, ToolItem, AnswerItem, RecapItem]
    thought, tool, answer, recap = t.items[1:]
    assert thought.text == "hmm ok" and thought.folded and thought.done
    assert (tool.status, tool.output, tool.elapsed, tool.started) == ("ok", "a\n", 0.5, 5.0)
    assert answer.text == "Done here." and answer.done
    assert recap.text == "⚙ 1 command(s) · 1.2s · 15 tokens"
    assert t.state is None


def test_reasoning_folds_once_the_answer_starts() -> None:
    t = Transcript()
    t.apply(ThoughtDelta(text="thinking"))
    thought = t.items[0]
    assert not thought.folded
    changed = t.apply(TextDelta(text="answer"))
    assert thought in changed and thought.folded


def test_fetch_content_spins_with_fetching() -> None:
    t = Transcript()
    t.apply(started(tool="fetch_content", title="fetch_content  https://example.com"))
    assert t.state == "Fetching"


def test_a_running_call_never_outlives_its_turn() -> None:
    t = Transcript()
    t.apply(started())
    t.apply(
        TurnEnded(turn=1, counters=Counters(), elapsed=0, usage=Usage(), stop_reason="cancelled")
    )
    tool = next(i for i in t.items if isinstance(i, ToolItem))
    assert tool.status == "cancelled"
    assert t.items[-1].text.endswith("cancelled")


def test_child_agent_lines_are_titled_with_the_agent() -> None:
    t = Transcript()
    t.apply(
        ToolCallStarted(
            call_id="k", tool="bash", title="bash  ls", kind="execute", arguments={}, agent="helper"
        )
    )
    assert t.items[0].title == "helper · bash  ls"
    assert t.tool("k", "helper") is t.items[0]
    assert t.tool("k") is None


def test_errors_become_notices() -> None:
    t = Transcript()
    t.apply(EngineError(where="provider", message="[error: boom]"))
    t.apply(EngineError(where="session", message="[warning: cannot write]"))
    assert [(i.level, i.text) for i in t.items if isinstance(i, NoticeItem)] == [
        ("error", "[error: boom]"),
        ("warning", "[warning: cannot write]"),
    ]


def test_fold_all_and_toggle() -> None:
    t = Transcript()
    for n in range(3):
        t.apply(started(f"c{n}"))
    assert len(t.fold_all(False)) == 3
    assert not any(i.folded for i in t.items)
    assert t.toggle(t.items[0]) and t.items[0].folded


def test_recap_text_shows_only_counters_that_are_not_zero() -> None:
    end = TurnEnded(
        turn=1,
        counters=Counters(file_ops=2, lsp_calls=1),
        elapsed=3.0,
        usage=Usage(),
        stop_reason="end_turn",
    )
    assert end.recap() == "📝 2 file op(s) · 🔎 1 lsp call(s) · 3.0s"


def test_a_resumed_history_is_rebuilt() -> None:
    t = Transcript()
    transcript_from_messages(
        t,
        [
            {"role": "system", "content": "x"},
            {"role": "user", "content": "list"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "1", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "1", "content": "[command rejected by the user]"},
            {"role": "assistant", "content": "ok"},
        ],
    )
    user, tool, answer = t.items
    assert user.text == "list"
    assert (tool.tool, tool.status) == ("bash", "rejected")
    assert answer.text == "ok"
