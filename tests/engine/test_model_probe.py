"""The model probe (engine/model_probe.py) against scripted servers that behave each way: each
finding, the requests it makes (never the script's), its bound, and a server that is not there."""

from __future__ import annotations

import pytest
from support.scripted_server import (
    SSE,
    ProbeBehaviour,
    Reply,
    ScriptedServer,
    closed_port_url,
    text_chunks,
)

from mm_tui.engine.context_window import ContextWindow
from mm_tui.engine.model_probe import PROBE_TOOL, ModelProbe
from mm_tui.engine.probe_findings import ProbeFindings


async def probe(behaviour: ProbeBehaviour, **knobs: object) -> tuple[ProbeFindings, ScriptedServer]:
    with ScriptedServer(Reply("the script's answer"), probe=behaviour) as server:
        findings = await ModelProbe(server.base_url, "scripted-model", **knobs).run()  # type: ignore[arg-type]
    assert server.requests == [] and server.pending == 1  # the script is the tests', untouched
    return findings, server


async def test_a_server_that_takes_and_streams_tools() -> None:
    found, server = await probe(ProbeBehaviour())
    assert found.status == "done" and found.reason == ""
    assert (found.chat, found.tools, found.streamed_calls) == ("yes", "yes", "yes")
    assert (found.several_calls, found.calls_in_text) == ("yes", "no")
    assert (found.reasoning, found.think_tags) == ("none", "no")
    assert found.tokens_per_second is not None and found.tokens_per_second > 0
    assert found.asking == "tools" and not found.unstreamed_tools and found.change() == ""
    streamed, chat = server.probe_requests
    assert streamed.stream and streamed.tool_names == ["probe_add"]
    assert streamed.headers["x-mm-probe"] == "tools-streamed"
    assert streamed["tool_choice"] == "auto"  # as the provider sends tools
    assert not chat.stream and chat.tools == [] and chat["max_tokens"] <= 32
    assert all(r["max_tokens"] <= 96 for r in server.probe_requests)


async def test_llama_cpp_pythons_empty_answer_means_tool_calls_go_non_streamed() -> None:
    found, server = await probe(ProbeBehaviour.llama_cpp_python())
    assert (found.tools, found.streamed_calls, found.several_calls) == ("yes", "no", "yes")
    assert found.unstreamed_tools and "non-streamed" in found.change()
    streamed, whole, _chat = server.probe_requests
    assert streamed.stream and not whole.stream and whole.tool_names == ["probe_add"]


async def test_a_refusal_of_tools_is_found_and_the_textual_form_tried() -> None:
    found, server = await probe(ProbeBehaviour(tools="refused"))
    assert (found.tools, found.text_calls, found.chat) == ("no", "yes", "yes")
    assert found.asking == "text calls"
    assert "described in the system prompt" in found.change()
    *_, text = server.probe_requests
    assert text.tools == [] and "<tool_call>" in text.messages[0]["content"]
    assert "probe_add" in text.messages[0]["content"]


async def test_a_model_that_writes_no_readable_call_is_spoken_to_in_chat_only() -> None:
    found, _ = await probe(ProbeBehaviour(tools="refused", text_calls=False))
    assert (found.tools, found.text_calls) == ("no", "no")
    assert found.asking == "chat only" and found.change().startswith("chat only:")


async def test_a_server_that_refuses_tool_choice_is_asked_without_it() -> None:
    found, server = await probe(ProbeBehaviour(tool_choice=False))
    assert (found.tools, found.streamed_calls) == ("yes", "yes")
    refused, streamed, _chat = server.probe_requests
    assert refused["tool_choice"] == "auto" and "tool_choice" not in streamed


async def test_a_stream_without_a_call_says_nothing_of_streamed_calls() -> None:
    found, _ = await probe(ProbeBehaviour(calls_as_text=True))
    assert (found.tools, found.streamed_calls, found.calls_in_text) == ("yes", "unknown", "yes")
    assert found.change() == ""


async def test_one_call_in_a_reply_is_not_several() -> None:
    found, _ = await probe(ProbeBehaviour(several_calls=False))
    assert found.several_calls == "no"


async def test_calls_written_as_text_though_tools_were_declared() -> None:
    found, _ = await probe(ProbeBehaviour(calls_as_text=True))
    assert (found.calls_in_text, found.several_calls) == ("yes", "yes")


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_a_reasoning_field_is_named(field: str) -> None:
    found, _ = await probe(ProbeBehaviour(reasoning=field))
    assert (found.reasoning, found.think_tags) == (field, "no")


async def test_think_tags_in_the_content() -> None:
    found, _ = await probe(ProbeBehaviour(reasoning="think"))
    assert (found.reasoning, found.think_tags) == ("none", "yes")


async def test_a_server_that_refuses_chat_is_said() -> None:
    found, _ = await probe(ProbeBehaviour(chat=False))
    assert found.status == "done" and found.chat == "no" and found.asking == "tools"


async def test_a_server_that_never_answers_is_given_up_on() -> None:
    found, server = await probe(ProbeBehaviour(silent=True), bound=0.5)
    assert found.status == "timed out" and "0.5 s" in found.reason
    assert found.tools == "unknown" and found.asking == "tools" and found.change() == ""
    assert len(server.probe_requests) >= 1


async def test_each_request_is_bounded_too() -> None:
    found, server = await probe(ProbeBehaviour(silent=True), bound=30, request_bound=0.3)
    assert found.status == "done"  # every request gave up on its own: nothing was found
    assert (found.tools, found.chat) == ("unknown", "no")
    assert len(server.probe_requests) == 3


async def test_an_answer_longer_than_asked_for_is_not_read_to_its_end() -> None:
    """A stream of 600 KiB that then never ends: the probe stops reading it past its cap, so
    each request ends at once instead of waiting out its bound (and the probe out its own)."""
    pieces = text_chunks("x" * 1024 * 600, split=1024)
    endless = ProbeBehaviour(fixed=SSE(pieces, silence_after=len(pieces)))
    found, server = await probe(endless, bound=20, request_bound=30)
    assert found.status == "done" and found.tools == "unknown"
    assert len(server.probe_requests) == 3


async def test_a_server_that_is_not_there() -> None:
    found = await ModelProbe(closed_port_url(), "m").run()
    assert found.status == "unreachable" and "connect" in found.reason
    assert found.asking == "tools"


async def test_the_window_given_is_among_the_findings() -> None:
    with ScriptedServer() as server:
        window = ContextWindow(8192, "llama.cpp /props")
        found = await ModelProbe(server.base_url, "scripted-model").run(window)
    assert (found.window, found.window_source) == (8192, "llama.cpp /props")
    assert "context window: 8,192 tokens (llama.cpp /props)" in found.lines()


async def test_the_key_goes_with_the_probe() -> None:
    with ScriptedServer(api_key="sekret") as server:
        found = await ModelProbe(server.base_url, "scripted-model", api_key="sekret").run()
        refused = await ModelProbe(server.base_url, "scripted-model", api_key="wrong").run()
    assert found.chat == "yes"
    assert refused.chat == "no" and refused.tools == "unknown"
    assert all(r.headers["authorization"].startswith("Bearer ") for r in server.probe_requests)


def test_the_engine_waits_for_the_probe_as_long_as_it_may_take() -> None:
    from mm_tui.engine.ask_style import PROBE_BOUND as ENGINE_BOUND
    from mm_tui.engine.probe_findings import PROBE_BOUND

    assert ENGINE_BOUND == PROBE_BOUND == ModelProbe("http://h/v1", "m").bound == 10


def test_the_probe_tool_is_tiny() -> None:
    assert PROBE_TOOL["function"]["name"] == "probe_add"
    assert len(str(PROBE_TOOL)) < 400
