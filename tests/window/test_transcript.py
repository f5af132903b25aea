"""The translation from engine events to the transcript store, without a terminal."""

from __future__ import annotations

from support.events import text_delta, tool_started

from mm_tui.core.events import (
    ComposingToolCall,
    ContextUsage,
    Counters,
    EngineError,
    HistoryCompacted,
    HistoryShortened,
    ModelProbed,
    PermissionRequested,
    Thinking,
    ThoughtDelta,
    ToolCallFinished,
    ToolCallRunning,
    TurnEnded,
    TurnStarted,
    Usage,
)
from mm_tui.engine.session import INTERRUPTED
from mm_tui.window.transcript.store import (
    WAITING,
    AnswerItem,
    CompactionItem,
    NoticeItem,
    RecapItem,
    ThoughtItem,
    ToolItem,
    Transcript,
    UserItem,
    transcript_from_records,
)


def test_a_turn_becomes_items_in_order() -> None:
    t = Transcript(clock=lambda: 5.0)
    t.apply(TurnStarted(turn=1, text="hi"))
    assert t.state == "Thinking"
    t.apply(ThoughtDelta(text="hmm "))
    t.apply(ThoughtDelta(text="ok"))
    t.apply(ComposingToolCall(index=0, name="bash", chars=3))
    assert t.state == "Composing a tool call"
    t.apply(tool_started())
    assert t.state == "Running"
    t.apply(ToolCallFinished(call_id="c1", tool="bash", status="ok", output="a\n", elapsed=0.5))
    t.apply(Thinking())
    t.apply(text_delta("Done"))
    t.apply(text_delta(" here."))
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
    changed = t.apply(text_delta("answer"))
    assert thought in changed and thought.folded


def test_fetch_content_spins_with_fetching() -> None:
    t = Transcript()
    t.apply(tool_started("fetch_content", {"url": "https://example.com"}))
    assert t.state == "Fetching"


def test_a_running_call_never_outlives_its_turn() -> None:
    t = Transcript()
    t.apply(tool_started())
    t.apply(
        TurnEnded(turn=1, counters=Counters(), elapsed=0, usage=Usage(), stop_reason="cancelled")
    )
    tool = next(i for i in t.items if isinstance(i, ToolItem))
    assert tool.status == "cancelled"
    assert t.items[-1].text.endswith("cancelled")


def test_an_answered_question_is_followed_by_what_the_engine_says_next() -> None:
    """The store takes the call's fate from the engine's events, not from the answer: allowed,
    `ToolCallRunning`; rejected, the call's end (never a guessed "Running")."""
    t = Transcript()
    t.apply(tool_started(call_id="c1"))
    t.apply(PermissionRequested(call_id="c1", tool="bash", title="bash  ls", details="ls"))
    assert (t.state, t.tool("c1").waiting) == (WAITING, True)
    t.apply(ToolCallRunning(call_id="c1", tool="bash"))
    assert (t.state, t.tool("c1").waiting) == ("Running", False)
    t.apply(tool_started("fetch_content", {"url": "https://example.com"}, "c2"))
    t.apply(PermissionRequested(call_id="c2", tool="fetch_content", title="f", details="f"))
    t.apply(ToolCallRunning(call_id="c2", tool="fetch_content"))
    assert t.state == "Fetching"
    t.apply(tool_started(call_id="c3"))
    t.apply(PermissionRequested(call_id="c3", tool="bash", title="bash  ls", details="ls"))
    t.apply(ToolCallFinished(call_id="c3", tool="bash", status="rejected", output="", elapsed=0))
    assert (t.state, t.tool("c3").waiting) == ("Thinking", False)
    # an asked agent's call: its question, then it runs, or is rejected while the ask goes on
    t.apply(tool_started(call_id="k1"))
    for call_id, runs in (("h1", True), ("h2", False)):
        helper = {"agent": "helper", "call_id": call_id, "tool": "bash"}
        t.apply(tool_started(**helper))
        t.apply(PermissionRequested(title="bash  ls", details="ls", **helper))
        assert t.state == WAITING
        if runs:
            t.apply(ToolCallRunning(**helper))
        else:
            t.apply(ToolCallFinished(status="rejected", output="", elapsed=0, **helper))
        assert (t.state, t.tool(call_id, "helper").waiting) == ("Running", False)


def test_child_agent_lines_are_titled_with_the_agent() -> None:
    t = Transcript()
    t.apply(tool_started(call_id="k", agent="helper"))
    assert t.items[0].title == "helper · bash  ls"
    assert t.tool("k", "helper") is t.items[0]
    assert t.tool("k") is None


def test_errors_become_notices() -> None:
    t = Transcript()
    t.apply(EngineError(where="provider", message="[error: boom]"))
    t.apply(EngineError(where="session", message="[warning: cannot write]", level="warning"))
    assert [(i.level, i.text) for i in t.items if isinstance(i, NoticeItem)] == [
        ("error", "[error: boom]"),
        ("warning", "[warning: cannot write]"),
    ]


def test_fold_all_and_toggle() -> None:
    t = Transcript()
    for n in range(3):
        t.apply(tool_started(call_id=f"c{n}"))
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


def message(role: str, content: str | None = None, **more: object) -> dict:
    return {"type": "message", "message": {"role": role, "content": content, **more}}


def calls(*items: tuple[str, str, str]) -> dict:
    """An assistant message asking for calls: (id, tool, arguments as JSON)."""
    return message(
        "assistant",
        None,
        tool_calls=[
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in items
        ],
    )


def result(call_id: str, content: str, **tool: object) -> dict:
    record = message("tool", content, tool_call_id=call_id)
    if tool:
        record["tool"] = tool
    return record


HEADER = {"type": "session", "version": 2, "id": "s", "created": "", "cwd": "/", "model": None}


def test_a_session_is_redrawn_from_its_records() -> None:
    summary = "The person asked for the files; ls ran; nothing else to do."
    records = [
        HEADER,
        message("system", "you are mm"),
        message("user", "list and break things"),
        message("assistant", "Looking."),
        calls(
            ("a", "bash", '{"command": "ls"}'),
            ("b", "read_file", '{"path": "nope.txt"}'),
            ("c", "bash", '{"command": "rm -rf /"}'),
        ),
        # ok whose text looks like an error: the record, not the text, decides
        result("a", "[error: not really]\n", status="ok", elapsed=0.25, title="bash  ls"),
        result("b", "no such file", status="error", elapsed=1.5, title="read_file  nope.txt"),
        result("c", "[command rejected by the user]", status="rejected", elapsed=3.0),
        {"type": "shortened", "time": "", "index": 5, "message": {"role": "tool"}, "cut": 1000},
        {"type": "shortened", "time": "", "index": 6, "message": {"role": "tool"}, "cut": 234},
        message("assistant", "Done."),
        {
            "type": "turn",
            "counters": {"commands": 2, "file_ops": 1, "skills": 0, "lsp_calls": 0},
            "usage": {"prompt_tokens": 100, "completion_tokens": 20},
            "elapsed": 4.75,
            "stop_reason": "end_turn",
        },
        {
            "type": "error",
            "time": "",
            "where": "session",
            "message": "[warning: disk full]",
            "level": "warning",
        },
        {"type": "error", "time": "", "where": "provider", "message": "[error: 500]"},
        {
            "type": "compaction",
            "time": "",
            "summary": summary,
            "replaced": 9,
            "auto": False,
            "messages": [{"role": "system", "content": "sum"}],
        },
        {"type": "history", "time": "", "messages": [{"role": "system", "content": "x"}]},
        message("user", [{"type": "text", "text": "and "}, {"type": "text", "text": "edit"}]),
        calls(("d", "edit_file", '{"path": "a.py"}')),
        result(
            "d",
            "the model's text",
            status="ok",
            elapsed=0.5,
            title="edit_file  a.py",
            display="edited a.py",
            diff="--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n",
        ),
        calls(("e", "bash", '{"command": "sleep 100"}')),  # mm was killed here
    ]
    t = Transcript()
    added = transcript_from_records(t, records)
    assert added == t.items
    assert [type(i).__name__ for i in t.items] == [
        "UserItem",
        "AnswerItem",
        "ToolItem",
        "ToolItem",
        "ToolItem",
        "NoticeItem",
        "AnswerItem",
        "RecapItem",
        "NoticeItem",
        "NoticeItem",
        "CompactionItem",
        "UserItem",
        "ToolItem",
        "ToolItem",
    ]
    assert [i.id for i in t.items] == list(range(1, 15))
    user, looking, a, b, c, short, done, recap, warning, error, compaction = t.items[:11]
    edit, killed = t.items[12:]
    assert user.text == "list and break things" and looking.text == "Looking." and looking.done
    assert (a.status, a.elapsed, a.title, a.output) == (
        "ok",
        0.25,
        "bash  ls",
        "[error: not really]\n",
    )
    assert (b.status, b.elapsed, b.title) == ("error", 1.5, "read_file  nope.txt")
    assert (c.status, c.elapsed) == ("rejected", 3.0)
    assert c.title == 'bash  {"command": "rm -rf /"}'  # no title kept: the name and arguments
    assert short.level == "info" and short.text == (
        "shortened 2 tool outputs by 1,234 characters to fit the model's context; "
        "the session journal keeps them whole"
    )
    assert done.text == "Done."
    assert recap.text == "⚙ 2 command(s) · 📝 1 file op(s) · 4.8s · 120 tokens"
    assert (warning.level, warning.text) == ("warning", "[warning: disk full]")
    assert (error.level, error.text) == ("error", "[error: 500]")
    assert isinstance(compaction, CompactionItem) and isinstance(compaction, ToolItem)
    assert compaction.title == HistoryCompacted(summary, 9, auto=False).title
    assert (compaction.status, compaction.output, compaction.folded) == ("ok", summary, True)
    assert compaction.foldable and not compaction.timed
    assert t.items[11].text == "and edit"
    assert (edit.output, edit.diff, edit.title) == (
        "edited a.py",
        "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n",
        "edit_file  a.py",
    )
    assert (killed.status, killed.output, killed.elapsed) == ("cancelled", INTERRUPTED, None)


def test_a_redraw_pairs_results_with_calls_in_order_when_ids_repeat() -> None:
    """Small servers count call ids from 0 at each answer: `0` names two calls here."""
    t = Transcript()
    transcript_from_records(
        t,
        [
            calls(("0", "bash", '{"command": "true"}')),
            result("0", "first", status="ok", elapsed=1.0),
            calls(("0", "bash", '{"command": "false"}')),
            result("0", "second", status="error", elapsed=2.0),
        ],
    )
    first, second = t.items
    assert (first.status, first.output, second.status, second.output) == (
        "ok",
        "first",
        "error",
        "second",
    )


def test_a_result_without_status_is_what_loading_gave_a_killed_call() -> None:
    """Loading answers a call a kill left without a result (INTERRUPTED); saved, that answer is
    a plain message record, with no status kept."""
    t = Transcript()
    transcript_from_records(
        t,
        [
            calls(("k", "bash", "{}"), ("m", "bash", "{}")),
            result("k", INTERRUPTED),
            result("m", "fine"),
        ],
    )
    assert [i.status for i in t.items] == ["cancelled", "ok"]


def test_a_turn_record_makes_the_live_recap() -> None:
    record = {
        "type": "turn",
        "counters": {"commands": 1},
        "usage": {"prompt_tokens": 3, "completion_tokens": 4},
        "elapsed": 2.0,
        "stop_reason": "cancelled",
        "context_used": 1234,
        "context_window": 4096,
    }
    t = Transcript()
    transcript_from_records(t, [record])
    live = TurnEnded(
        turn=1,
        counters=Counters(commands=1),
        elapsed=2.0,
        usage=Usage(3, 4),
        stop_reason="cancelled",
        context_used=1234,
        context_window=4096,
    )
    (recap,) = t.items
    assert (
        recap.text
        == live.recap()
        == "⚙ 1 command(s) · 2.0s · 7 tokens · ctx 1,234 / 4,096 (30%) · cancelled"
    )
    assert recap.stop_reason == "cancelled"


def test_compaction_and_shortening_live() -> None:
    t = Transcript()
    t.apply(text_delta("partial"))
    changed = t.apply(
        HistoryCompacted(
            summary="the summary", replaced=12, auto=True, tokens_before=3000, tokens_after=400
        )
    )
    answer, item = changed
    assert answer.done
    assert isinstance(item, CompactionItem) and item is t.items[-1]
    assert item.title == (
        "compacted 12 messages into a summary automatically, near the context window, "
        "3,000 → 400 tokens"
    )
    assert (item.output, item.status, item.folded) == ("the summary", "ok", True)
    assert t.toggle(item) and not item.folded
    (notice,) = t.apply(HistoryShortened(outputs=2, chars_cut=99, message="shortened two"))
    assert (notice.level, notice.text) == ("info", "shortened two")
    assert t.apply(ContextUsage(used=10, window=100)) == []
    assert len(t.items) == 3


def test_clear_counts_ids_from_one_again() -> None:
    """The view finds an item's lines at `id - 1`: after a new session, ids must start over."""
    t = Transcript()
    for n in range(3):
        t.apply(tool_started(call_id=f"c{n}"))
    t.clear()
    t.apply(TurnStarted(turn=1, text="again"))
    (changed,) = t.apply(text_delta("hi"))
    assert changed is t.items[changed.id - 1]
    assert [i.id for i in t.items] == [1, 2]


def test_a_compaction_s_summary_opens_as_markdown_not_raw() -> None:
    """The model's summary is Markdown, as its answers are: opened under the compaction's
    line it shows emphasis and lists drawn, not their asterisks and dashes."""
    from rich.console import Console
    from rich.style import Style

    from mm_tui.window.transcript.renderers.tool_line import ToolLine
    from mm_tui.window.transcript.store import CompactionItem

    item = CompactionItem(
        title="compacted 3 messages into a summary by /compact",
        summary="**Task**: count the files.\n\n- `ls` ran\n- nothing is left",
    )
    item.folded = False
    line = ToolLine(Console(width=80, color_system=None), lambda name: Style())
    text = "\n".join(strip.text.rstrip() for strip in line.body(item, 80))
    assert "Task: count the files." in text and "**" not in text
    assert "• ls ran" in text and "`" not in text
    assert all(row.startswith("    ") for row in text.splitlines() if row)


def test_a_resumed_answer_shows_its_reasoning_folded() -> None:
    """The journal keeps an answer's reasoning beside it: the reopened transcript shows it above
    the answer, folded, as the live one was once the answer started."""
    record = {"type": "message", "time": "", "thought": "Let me look first."}
    record["message"] = {"role": "assistant", "content": "Nothing there."}
    t = Transcript()
    transcript_from_records(t, [record])
    thought, answer = t.items
    assert isinstance(thought, ThoughtItem) and thought.folded and thought.done
    assert thought.pieces == ["Let me look first."]
    assert isinstance(answer, AnswerItem) and answer.pieces == ["Nothing there."]


def test_the_probes_line_is_a_notice() -> None:
    t = Transcript()
    t.apply(ModelProbed(text="requests with tools go non-streamed: the server loses them"))
    (notice,) = t.items
    assert isinstance(notice, NoticeItem) and notice.level == "info"
    assert notice.text == "requests with tools go non-streamed: the server loses them"
