"""Keeping the conversation inside the model's context window: the meter's counting
and cutting, and the engine on a scripted server that enforces a window the way real servers do
(their 400s, their /props, /api/show, /v1/models): long turns under a 2,048-token window finish,
old outputs are shortened (the journal keeps them whole), the history is compacted when that is
not enough, a refusal teaches mm the window and the request is made again, and a request that
cannot fit ends the turn with the advice."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from support.engine import make_engine, of, turn
from support.scripted_server import (
    Received,
    Reply,
    ScriptedServer,
    call,
    context_error,
    scripted_prompt_tokens,
)
from support.session_helpers import saved

from mm_tui.config import Settings
from mm_tui.core.events import (
    ContextUsage,
    HistoryCompacted,
    HistoryShortened,
    ToolCallFinished,
    TurnEnded,
)
from mm_tui.engine.context import ContextMeter, reserve_for_answer, summary_request
from mm_tui.engine.context_window import ContextWindow
from mm_tui.engine.journal import flush_all
from mm_tui.engine.servers import Preset
from mm_tui.engine.session import Session
from mm_tui.engine.turn import UNKNOWN_WINDOW
from mm_tui.startup import new_session_like, start

SUMMARY_ASK = "Summarise this conversation so far"


# --- the meter -----------------------------------------------------------------------------------


def test_the_estimate_starts_conservative_and_learns_from_the_server() -> None:
    meter = ContextMeter(ContextWindow(4096, "test"))
    messages = [{"role": "user", "content": "x" * 3000}]
    first = meter.estimate(messages, [])
    chars = meter.chars(messages, [])
    assert first >= chars / 3  # 3 characters a token before any count: errs on the big side
    meter.observed(prompt_tokens=chars // 4, chars=chars)
    assert meter.estimate(messages, []) == chars // 4  # the server's count, exactly
    messages.append({"role": "tool", "tool_call_id": "a", "content": "y" * 400})
    grown = meter.estimate(messages, [])
    added = meter.chars(messages, []) - chars
    assert grown == round(chars // 4 + added / meter.chars_per_token)
    assert 3.9 < meter.chars_per_token < 4.1


def test_a_message_is_measured_once() -> None:
    meter = ContextMeter()
    message = {"role": "user", "content": "hello"}
    assert meter.size(message) == len(json.dumps(message))
    message["content"] = "changed in place"  # mm never does this: messages are replaced
    assert meter.size(message) == len(json.dumps({"role": "user", "content": "hello"}))
    assert meter.size(dict(message)) == len(json.dumps(message))


def test_the_reserve_and_the_budget() -> None:
    assert reserve_for_answer(2048) == 512
    assert reserve_for_answer(128_000) == 4096
    assert ContextMeter(ContextWindow(2048, "t")).budget == 1536
    assert ContextMeter().budget is None and ContextMeter().fair_share_chars(100) is None


def test_a_cut_keeps_head_and_tail_and_says_what_went() -> None:
    meter = ContextMeter(ContextWindow(2048, "t"))
    text = "".join(f"line {i}\n" for i in range(1000))
    cut = meter.cut(text, 300)
    head, tail = cut.split("\n[…", 1)[0], cut.rsplit("…]\n", 1)[1]
    assert text.startswith(head) and text.endswith(tail)
    assert len(head) + len(tail) == 300
    gone = len(text) - 300
    assert f"[… {gone:,} characters cut by mm to fit the model's 2,048-token context; " in cut
    assert "the session journal keeps the whole output …]" in cut
    assert meter.cut("short", 300) == "short"


def test_shortening_takes_the_oldest_outputs_first_and_the_last_round_last() -> None:
    meter = ContextMeter(ContextWindow(2048, "t"))
    messages: list[dict[str, Any]] = [{"role": "system", "content": "s"}]
    for i in range(4):
        messages.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}"}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"{i}" * 3000})
    replaced: list[int] = []

    def replace(index: int, message: dict[str, Any], cut: int) -> None:
        replaced.append(index)
        messages[index] = message

    before = meter.estimate(messages, [])
    done = meter.shorten_old_outputs(messages, [], before - 1500, 300, replace)
    assert replaced == [2, 4]  # the oldest two were enough
    shorter = meter.cut("0" * 3000, 300)
    assert len(shorter) < 500
    assert done.outputs == 2 and done.chars_cut == 2 * (3000 - len(shorter))
    everything = meter.shorten_old_outputs(messages, [], 0, 300, replace)
    assert replaced == [2, 4, 6, 8]  # the last round's output goes last
    assert everything.outputs == 2


def test_a_summary_request_fits_and_never_starts_at_a_tool_result() -> None:
    meter = ContextMeter(ContextWindow(1024, "t"))
    messages: list[dict[str, Any]] = [{"role": "system", "content": "sys"}]
    for i in range(30):
        messages.append({"role": "user", "content": f"question {i} " + "q" * 100})
        messages.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}"}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "r" * 150})
    ask = {"role": "user", "content": "summarise"}
    request = summary_request(meter, messages, ask)
    assert request[0] == messages[0] and request[-1] == ask
    assert request[1]["role"] != "tool"
    assert request[-2] == messages[-1]  # the latest messages are kept
    assert meter.estimate(request, []) <= meter.budget  # type: ignore[operator]
    small = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]
    assert summary_request(meter, small, ask) == [*small, ask]


# --- the engine on a server that enforces a window ----------------------------------------------


def was_refused(server: ScriptedServer, req: Received) -> bool:
    assert server.context_window is not None
    return context_error(server.context_style, server.context_window, req.body) is not None


def long_task(calls: int) -> Any:
    """A model that runs `calls` different commands, one per request, then answers; asked for a
    summary, it gives one. The count survives compactions: it is the model's own."""
    done = {"calls": 0}

    def answer(req: Received) -> Reply:
        last = req.messages[-1]
        if last.get("role") == "user" and str(last.get("content", "")).startswith(SUMMARY_ASK):
            return Reply(f"Summary: ran {done['calls']} of {calls} commands; keep going.")
        if done["calls"] >= calls:
            return Reply(f"All {calls} commands ran.")
        done["calls"] += 1
        i = done["calls"]
        return Reply(tool_calls=[call("bash", {"command": f"seq {i} {i + 250}"}, id=f"c{i}")])

    return answer


@pytest.mark.parametrize("style", ["llama-cpp-python", "openai", "vllm", "llama.cpp"])
async def test_a_60_call_turn_finishes_under_a_2048_token_window(
    tmp_path: Path, style: str
) -> None:
    server = ScriptedServer(
        context_window=2048,
        context_style=style,
        report_usage=True,
        serves="llama.cpp" if style == "llama.cpp" else "vllm" if style == "vllm" else None,
        on_empty=long_task(60),
    )
    with server:
        engine = make_engine(tmp_path, server, maxTurns=200)
        notes = await engine.learn_context_window()
        events = await asyncio.wait_for(turn(engine, "run sixty commands"), 120)
    end = events[-1]
    assert isinstance(end, TurnEnded) and end.stop_reason == "end_turn", end
    finished = of(events, ToolCallFinished)
    assert len(finished) == 60 and all(f.status == "ok" for f in finished)
    assert "All 60 commands ran." in "".join(
        e.text for e in events if type(e).__name__ == "TextDelta"
    )
    assert of(events, HistoryShortened), "old outputs were never shortened"
    assert of(events, HistoryCompacted), "the history was never compacted"
    usages = of(events, ContextUsage)
    assert usages and all(u.window == 2048 for u in usages)
    refused = [r for r in server.requests if was_refused(server, r)]
    if style in ("llama.cpp", "vllm"):  # the server said its window at start-up
        assert notes[0].startswith("context window: 2,048 tokens (")
    # A refusal is allowed only where the window was unknown, and then once, to learn it.
    assert len(refused) <= (0 if style in ("llama.cpp", "vllm") else 1), len(refused)
    # Every output the model got whole or cut, the journal has whole.
    flush_all()
    loaded = Session.load(engine.session.folder, engine.session.id)
    outputs = {
        r["message"]["tool_call_id"]: r["message"]["content"]
        for r in loaded.records
        if r["type"] == "message" and r["message"]["role"] == "tool"
    }
    for i in range(1, 61):
        assert outputs[f"c{i}"] == "".join(f"{n}\n" for n in range(i, i + 251))
    assert any(r["type"] == "shortened" for r in loaded.records)
    assert any(r["type"] == "compaction" and r["auto"] for r in loaded.records)
    assert end.context_window == 2048 and 0 < end.context_used <= 2048
    assert "ctx " in end.recap() and "/ 2,048 (" in end.recap()
    await engine.aclose()


async def test_a_refusal_teaches_the_window_and_the_request_is_made_again(tmp_path: Path) -> None:
    # 9,000 characters of output, about 2,250 of the server's tokens: over its 2,048.
    command = "head -c 9000 /dev/zero | tr '\\0' z"
    server = ScriptedServer(
        Reply(tool_calls=[call("bash", {"command": command}, id="c1")]),
        Reply("done"),
        context_window=2048,
        context_style="llama-cpp-python",
        report_usage=True,
    )
    with server:
        engine = make_engine(tmp_path, server)
        assert await engine.learn_context_window() == [UNKNOWN_WINDOW]
        assert UNKNOWN_WINDOW == (
            "the model's context window is unknown: mm learns it from the server's first "
            "refusal of a request too big; set contextWindow in the config to tell it"
        )
        assert engine.context_usage() is None
        events = await asyncio.wait_for(turn(engine, "echo it"), 30)
    assert events[-1].stop_reason == "end_turn", events[-1]
    assert engine.meter.window == ContextWindow(2048, "the server's refusal")
    refused = [r for r in server.requests if was_refused(server, r)]
    assert len(refused) == 1
    assert server.requests[-1].messages[-1]["role"] == "tool"
    sent = server.requests[-1].messages[-1]["content"]
    assert "characters cut by mm to fit the model's 2,048-token context" in sent
    assert sent.startswith("zzz") and sent.endswith("zzz")
    whole = [r for r in engine.session.records if r.get("tool")][0]["message"]["content"]
    assert whole == "z" * 9000
    assert saved(engine.session)["messages"][-2]["content"] == sent
    await engine.aclose()


async def test_a_tool_result_gets_a_fair_share_and_the_journal_the_whole(tmp_path: Path) -> None:
    script = [
        Reply(tool_calls=[call("bash", {"command": "seq 1 8000"}, id="c1")]),  # 38,894 chars
        Reply("done"),
    ]
    with ScriptedServer(*script, context_window=2048, report_usage=True) as server:
        engine = make_engine(tmp_path, server, contextWindow=2048)
        assert await engine.learn_context_window() == [
            "context window: 2,048 tokens (contextWindow in the config)"
        ]
        events = await asyncio.wait_for(turn(engine, "count"), 30)
    whole = "".join(f"{n}\n" for n in range(1, 8001))
    (finished,) = of(events, ToolCallFinished)
    assert len(whole) > 30_000 and finished.output.startswith("1\n2\n")  # shown as the tool gave
    sent = server.requests[1].messages[-1]["content"]
    assert len(sent) < 2000 and sent.startswith("1\n2\n3\n")
    (notice,) = of(events, HistoryShortened)
    assert notice.message.startswith("bash's output of ")
    assert notice.message.endswith(
        ", a fair share of its 2,048-token context; the session journal keeps it whole"
    )
    flush_all()
    loaded = Session.load(engine.session.folder, engine.session.id)
    (record,) = [r for r in loaded.records if r.get("tool")]
    assert record["message"]["content"] == finished.output  # whole, up to maxOutput
    assert loaded.messages[-2]["content"] == sent  # the history keeps what was sent
    await engine.aclose()


async def test_a_resumed_session_counts_its_context_as_its_last_turn_did(tmp_path: Path) -> None:
    """One way of counting: the header of a reopened session shows what the end of its last
    turn showed (the server's count carried on), not a fresh estimate at the default
    characters per token (which said 1,390 against the last turn's 984)."""
    script = [
        Reply(tool_calls=[call("bash", {"command": "seq 1 200"}, id="c1")]),
        Reply("done"),
    ]
    with ScriptedServer(*script, context_window=2048, report_usage=True) as server:
        engine = make_engine(tmp_path, server, contextWindow=2048)
        await engine.learn_context_window()
        events = await asyncio.wait_for(turn(engine, "count"), 30)
        end = events[-1]
        assert end.context_used > 0
        flush_all()
        loaded = Session.load(engine.session.folder, engine.session.id)
        again = make_engine(tmp_path, server, contextWindow=2048, session=loaded)
        await again.learn_context_window()
        usage = again.context_usage()
        assert usage is not None and usage.used == end.context_used, (usage, end.context_used)
        fresh = ContextMeter()  # what the count would be without the journal's
        assert fresh.estimate(loaded.messages, again.tools()) != end.context_used
        await engine.aclose()
        await again.aclose()


async def test_the_figure_says_it_is_an_estimate_until_the_server_counts(tmp_path: Path) -> None:
    """Before a session's first answer the figure is the estimate alone, at the default
    characters per token: it is shown `ctx ~1,264`, so that the server's count after the first
    request (963 there) does not look like the context shrinking. After `/new` it is an
    estimate again; a turn's recap carries the mark when the server counted nothing."""
    with ScriptedServer(context_window=2048, report_usage=True) as server:
        server.script(Reply("an answer"))
        engine = make_engine(tmp_path, server, contextWindow=2048)
        await engine.learn_context_window()
        before = engine.context_usage()
        assert before is not None and before.estimated
        assert before.text == (
            f"ctx ~{before.used:,} / 2,048 ({before.used * 100 // 2048}%) · fixed ~{before.fixed:,}"
        )
        end = (await asyncio.wait_for(turn(engine, "hello"), 30))[-1]
        after = engine.context_usage()
        assert after is not None and not after.estimated and "~" not in after.text
        assert not end.context_estimated and f"ctx {end.context_used:,} / 2,048" in end.recap()
        engine.new_session(new_session_like(engine))
        fresh = engine.context_usage()
        assert fresh is not None and fresh.estimated
        await engine.aclose()
    with ScriptedServer(context_window=2048) as server:  # usage that counts no request
        server.script(Reply("an answer", usage=(10, 5)))
        engine = make_engine(tmp_path, server, contextWindow=2048)
        await engine.learn_context_window()
        end = (await asyncio.wait_for(turn(engine, "hello"), 30))[-1]
        assert end.context_estimated and f"ctx ~{end.context_used:,} / 2,048" in end.recap()
        assert saved(engine.session)["turns"][-1]["context_estimated"] is True
        await engine.aclose()


async def test_a_request_that_cannot_fit_ends_the_turn_with_the_advice(tmp_path: Path) -> None:
    with ScriptedServer("never", context_window=2048) as server:
        engine = make_engine(tmp_path, server, contextWindow=2048)
        await engine.learn_context_window()
        events = await asyncio.wait_for(turn(engine, "q" * 20_000), 30)
    end = events[-1]
    assert end.stop_reason == "error"
    assert end.error is not None
    assert end.error.startswith("[error: the request needs about ")
    assert end.error.endswith(
        ", more than the model's 2,048-token context leaves for it — the conversation no longer "
        "fits the model's context — /compact to shorten it, /new to start afresh, or load the "
        "model with a larger context (for example Ollama's num_ctx, llama.cpp's --ctx-size)]"
    )
    assert server.requests == []  # nothing is sent that cannot fit
    await engine.aclose()


# --- reading the window at start-up ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("serves", "source"),
    [
        ("llama.cpp", "llama.cpp /props"),
        ("vllm", "vLLM /v1/models"),
        ("lmstudio", "LM Studio /api/v0/models"),
        ("ollama", "Ollama /api/ps"),
    ],
)
async def test_start_up_reads_the_window_and_says_so(
    tmp_path: Path, serves: str, source: str
) -> None:
    with ScriptedServer(serves=serves, context_window=8192, model_max=32768) as server:
        settings = Settings(baseUrl=server.base_url, model="scripted-model")
        started = await start(settings, tmp_path)
        note = f"context window: 8,192 tokens ({source})"
        assert note in started.notes
        usage = started.engine.context_usage()
        assert usage is not None and usage.window == 8192 and usage.used > 0
        await started.engine.aclose()


async def test_the_config_overrides_the_server(tmp_path: Path) -> None:
    with ScriptedServer(serves="llama.cpp", context_window=8192) as server:
        settings = Settings(baseUrl=server.base_url, model="scripted-model", contextWindow=4096)
        started = await start(settings, tmp_path)
        assert "context window: 4,096 tokens (contextWindow in the config)" in started.notes
        # the window was not asked for: only the start-up check's GET /models reached the
        # server, and the question whether it is Ollama, which is asked to keep the window
        # (test_ollama_window.py)
        lookups = [(r.method, r.path) for r in server.lookups]
        assert lookups == [("GET", "/v1/models"), ("POST", "/api/show")]
        await started.engine.aclose()


def test_scripted_tokens_are_what_the_tests_assume() -> None:
    body = {"messages": [{"role": "user", "content": "x" * 400}]}
    assert scripted_prompt_tokens(body) == 100 + len('[{"role":"user","content":""}]') // 4 + 1


def test_measuring_a_grown_history_counts_what_it_grew_by() -> None:
    meter = ContextMeter()
    history: list[dict[str, Any]] = [{"role": "user", "content": "a" * 10}]
    first = meter.chars(history, [])
    history.append({"role": "assistant", "content": "b" * 20})
    assert meter.chars(history, []) == first + meter.size(history[1])
    history[1] = {"role": "assistant", "content": "b"}  # the last one replaced: measured anew
    assert meter.chars(history, []) == first + meter.size(history[1])
    other = [{"role": "user", "content": "c"}]
    assert meter.chars(other, []) == meter.size(other[0])  # another list: its own total
    history[0] = {"role": "user", "content": ""}
    meter.forget_base()
    assert meter.chars(history, []) == sum(map(meter.size, history))


async def test_a_resumed_session_keeps_its_model_on_its_server_only_when_the_person_names_it(
    tmp_path: Path,
) -> None:
    """The journal's server is the one a rewritten journal would name: it is never asked for
    that reason. The session keeps its model where detection finds that very server."""
    with ScriptedServer(models=("model-a",)) as first, ScriptedServer(models=("model-b",)) as other:
        made = await start(Settings(baseUrl=first.base_url, model="model-a"), tmp_path)
        await asyncio.wait_for(turn(made.engine, "hello"), 20)
        await made.engine.aclose()
        asked = len(first.requests)
        # No server configured, detection finds another: that one, with a note; not the journal's.
        resumed = await start(
            Settings(), tmp_path, resume="", presets=(Preset("llama.cpp", other.base_url),)
        )
        client = resumed.engine.client
        assert (client.base_url, client.model) == (other.base_url, "model-b")
        assert f"the session was with {first.base_url}, which only its file names" in " ".join(
            resumed.notes
        )
        await resumed.engine.aclose()
        assert len(first.requests) == asked
        # Detection finds the journal's own server: the session's model goes on there.
        again = await start(
            Settings(), tmp_path, resume="", presets=(Preset("llama.cpp", first.base_url),)
        )
        assert (again.engine.client.base_url, again.engine.client.model) == (
            first.base_url,
            "model-a",
        )
        assert not any("which only its file names" in note for note in again.notes)
        await again.engine.aclose()
        # A server named by the person wins, with its own model.
        named = await start(Settings(baseUrl=other.base_url), tmp_path, resume="", presets=())
        assert (named.engine.client.base_url, named.engine.client.model) == (
            other.base_url,
            "model-b",
        )
        await named.engine.aclose()
