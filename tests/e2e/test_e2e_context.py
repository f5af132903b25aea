"""A turn of many tool calls on the real server with a 2,048-token context.

Before mm kept inside the window, this model at `--n_ctx 2048` filled it after about nine calls:
the server answered `400 … maximum context length is 2048 tokens` and `mm -p` exited 1 with that
error. llama-cpp-python does not report its window anywhere but in that refusal, so mm learns it
there, makes room (old outputs shortened, then the history compacted) and asks again.

Whatever the model says, the turn must end on its own terms: its answer, or one of the two guards
that stop a model going round in circles (maxTurns, the loop detector), which `mm -p` reports
with exit status 1. A context overflow must never end it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_helpers import assert_well_formed, write_config
from support.program import mm
from support.session_helpers import journal_files, sessions_of

from mm_tui.engine.session import Session

# At temperature 0 this model answers each of these with one bash call after another (about
# thirty before maxTurns, with two compactions on the way, in the runs this test was written
# with). Its path depends on what the commands print (`ls -la` shows times to the minute, and
# /usr/bin differs from one machine to the next), so now and then it repeats a failing call until
# the loop detector stops it before the tenth call. Such a run never reached the window and
# proves nothing either way: the next request is tried.
REQUESTS = (
    "Run the command ls -la with bash, then run ls -la /usr/bin with bash, then keep running "
    "more commands.",
    "Run the command ls with bash, then run ls -la /usr/bin with bash, then keep running "
    "more commands.",
    "Run the command pwd with bash, then run ls -la with bash, then keep running more commands.",
)
GUARDS = (
    "[error: the turn reached maxTurns (",
    "turn stopped by the loop detector",
)


@pytest.mark.timeout(900)  # three runs of the real model at most
def test_many_tool_calls_in_a_2048_token_context_end_cleanly(server, project: Path):
    assert server.n_ctx == 2048
    write_config(project, temperature=0, maxTurns=30)
    for attempt, request in enumerate(REQUESTS):
        result = mm(
            "--base-url", server.base_url, "--model", server.model_id, "-p", request,
            cwd=project, timeout=280,
        )  # fmt: skip
        out = result.stdout + result.stderr
        assert "no longer fits the model's context" not in out, out
        assert "maximum context length" not in out, out
        journal = journal_files(sessions_of(project))[-1]  # this run's (ids sort by time)
        session = Session.load(journal.parent, journal.name.removesuffix(".jsonl"))
        assert_well_formed(session.messages)
        (turn,) = session.turns
        if result.returncode != 0:
            assert turn.stop_reason in ("max_turns", "loop_detected"), out
            assert any(guard in out for guard in GUARDS), out
        else:
            assert turn.stop_reason == "end_turn", out
        results = [r for r in session.records if r["type"] == "message" and r.get("tool")]
        if len(results) >= 10 or turn.stop_reason != "loop_detected":
            break
        print(f"attempt {attempt + 1}: the loop detector stopped the model after {len(results)}")
    # Past the ninth call, where the context used to overflow.
    assert len(results) >= 10, f"only {len(results)} calls: {out}"
    # The recap says how full the context is, against the window the server's refusal taught.
    recap = result.stdout.rstrip("\n").splitlines()[-1]
    if "ctx " in recap:
        used = int(recap.split("ctx ")[1].split(" / ")[0].replace(",", ""))
        # then, when the fixed prompt's part is known, ` · fixed N` (or `~N` while estimated)
        figure = recap.split("ctx ", 1)[1].split(" · fixed ")[0].rstrip()
        assert figure.endswith(f"/ 2,048 ({used * 100 // 2048}%)"), recap
        assert 0 < used <= 2048
