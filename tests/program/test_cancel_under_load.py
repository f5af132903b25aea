"""A cancel at any moment, on a machine whose cores are busy twice over: what the command wrote
before it is in the result, and nothing of the command is left running. On a loaded machine a
cancel used to arrive while the start was still being handed back from the launcher, and the
result said `[error: cancelled]` alone though the command had written its first line."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.engine import make_engine, of
from support.load import busy_cores
from support.processes import running
from support.scripted_model import ScriptedModel, calls
from support.waiting import await_until

from mm_tui.config import Settings
from mm_tui.core.events import Event, ToolCallFinished
from mm_tui.tools.args import BashArgs
from mm_tui.tools.base import CANCELLED, ToolCancelled, ToolContext
from mm_tui.tools.bash import BashTool

# after the task starts: at once (its first step), then later and later, into the sleep
DELAYS = [0, 0, 0.001, 0.003, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5]
SLEEP = "61.5"  # a number no other test sleeps for: `running` finds only these


async def test_a_cancel_at_any_moment_keeps_what_the_command_wrote(tmp_path: Path) -> None:
    ctx = ToolContext(cwd=tmp_path, settings=Settings())
    with busy_cores():
        for n, delay in enumerate(DELAYS):
            wrote = tmp_path / f"wrote-{n}"
            command = f"echo started-{n}; touch {wrote}; sleep {SLEEP}"
            task = asyncio.create_task(BashTool().run(BashArgs(command=command), ctx))
            await asyncio.sleep(delay)
            task.cancel()
            with pytest.raises(ToolCancelled) as caught:
                await task
            output = caught.value.output
            assert output.endswith(CANCELLED), (delay, output)
            if wrote.exists():  # the echo came before the touch: its line was written
                assert output == f"started-{n}\n{CANCELLED}", (delay, output)
            else:
                assert output in (CANCELLED, f"started-{n}\n{CANCELLED}"), (delay, output)
        gone = await await_until(lambda: not running("sleep", SLEEP), 30)
        assert gone, "a cancelled command was left running"


async def test_a_cancelled_turn_keeps_the_output_of_its_command(tmp_path: Path) -> None:
    wrote = tmp_path / "wrote"
    model = ScriptedModel(
        calls(("bash", {"command": f"echo started; touch {wrote}; sleep {SLEEP}"}, "a"))
    )
    engine = make_engine(tmp_path, model)
    events: list[Event] = []
    with busy_cores():
        turn = asyncio.create_task(engine.run_turn("go", events.append))
        assert await await_until(wrote.exists, 60), "the command never ran"
        assert engine.cancel()
        end = await asyncio.wait_for(turn, 60)
        assert end.stop_reason == "cancelled"
        finished = of(events, ToolCallFinished)
        assert finished[0].status == "cancelled"
        assert finished[0].output == f"started\n{CANCELLED}"
        assert await await_until(lambda: not running("sleep", SLEEP), 30)
    await engine.aclose()
