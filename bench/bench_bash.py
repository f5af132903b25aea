"""How much the bash tool costs on top of starting a shell.

The floor is the least any implementation must do: a temporary file, `bash -c true` started by
Popen (vfork and exec) with its output going to that file, a blocking wait and a read-back.
asyncio's own start of the same child is printed beside it: the tool starts its commands from a
launcher process instead (core/launcher.py: one message out and one back, the status). The
tool adds its process group, its quiet environment and its markers; the goal is at most 1.3x
the floor. Both are measured in the same run, interleaved, so that a busy machine slows both
alike, each kind of call after each other in turn.

The sandbox (core/sandbox.py, `sandbox: auto`) against none (`sandbox: off`): the same tool call,
confined and not, interleaved too; the goal is at most 1.3x + 2 ms. Building a ruleset (once per
project, and again when a folder it lists changes) and starting its launcher process (from the
request to a launcher ready to start commands, confined) are measured apart.

Run: .venv/bin/python bench/bench_bash.py [calls, 200 by default]  (--quick: 20 calls)
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mm_tui.config import Settings  # noqa: E402
from mm_tui.core import sandbox  # noqa: E402
from mm_tui.tools.args import BashArgs
from mm_tui.tools.base import ToolContext  # noqa: E402
from mm_tui.tools.bash import BashTool  # noqa: E402

GOAL = 1.3
SANDBOX_GOAL = (1.3, 0.002)  # confined <= 1.3 x unconfined + 2 ms


async def bare_call() -> str:
    """The floor: Popen (vfork and exec) and a blocking wait, the least a start can cost."""
    with tempfile.TemporaryFile(buffering=0) as out:
        subprocess.Popen(["bash", "-c", "true"], stdout=out, stderr=subprocess.STDOUT).wait()
        return read_back(out.fileno())


async def asyncio_call() -> str:
    """For comparison: asyncio's own start of a child (3.11: a thread per child waits for it)."""
    with tempfile.TemporaryFile(buffering=0) as out:
        proc = await asyncio.create_subprocess_exec(
            "bash", "-c", "true", stdout=out, stderr=asyncio.subprocess.STDOUT
        )
        await proc.wait()
        return read_back(out.fileno())


def read_back(fd: int) -> str:
    return os.pread(fd, os.fstat(fd).st_size, 0).decode("utf-8", errors="replace")


def ms(times: list[float]) -> str:
    return (
        f"{statistics.mean(times) * 1000:8.3f} ms mean, "
        f"{statistics.median(times) * 1000:8.3f} ms median"
    )


async def main(calls: int) -> None:
    from private_home import private_home

    private_home()  # a home of its own: none of the person's is read or written
    tool = BashTool()
    ctx = ToolContext(cwd=Path.cwd(), settings=Settings(sandbox="off"))
    confined = ToolContext(cwd=Path.cwd(), settings=Settings(sandbox="auto"))
    args = BashArgs(command="true")
    for _ in range(10):  # warm up: imports, caches, the child watcher, the sandbox's ruleset
        await tool.run(args, ctx)
        await tool.run(args, confined)
        await bare_call()

    times: dict[str, list[float]] = {"tool": [], "bare": [], "sandbox": [], "asyncio": []}
    calls_of = {
        "tool": lambda: tool.run(args, ctx),
        "bare": bare_call,
        "sandbox": lambda: tool.run(args, confined),
        "asyncio": asyncio_call,
    }
    order = list(calls_of)
    for _ in range(calls):
        # each kind after each other in turn: what one leaves behind (asyncio's start leaves a
        # thread that is still ending) would otherwise slow the same one every time
        order.append(order.pop(0))
        for kind in order:
            t = time.perf_counter()
            await calls_of[kind]()
            times[kind].append(time.perf_counter() - t)
    tool_times, bare_times = times["tool"], times["bare"]
    sandbox_times, asyncio_times = times["sandbox"], times["asyncio"]

    tool_mean = statistics.mean(tool_times)
    bare_mean = statistics.mean(bare_times)
    print(f"calls:              {calls}")
    print(f"BashTool.run(true): {ms(tool_times)}  (sandbox: off)")
    print(f"bare bash -c true:  {ms(bare_times)}  (Popen and wait: the floor)")
    print(f"asyncio's start:    {ms(asyncio_times)}  (create_subprocess_exec, for comparison)")
    print(f"ratio (mean):       {tool_mean / bare_mean:8.3f}  (goal: <= {GOAL})")
    median_ratio = statistics.median(tool_times) / statistics.median(bare_times)
    print(f"ratio (median):     {median_ratio:8.3f}  (a busy machine's outliers weigh less)")

    abi, why = sandbox.landlock_abi()
    if abi < 1:
        print(f"sandbox:            not measured: {why}")
        return
    sandbox_mean = statistics.mean(sandbox_times)
    factor, extra = SANDBOX_GOAL
    goal = factor * tool_mean + extra
    print(f"sandboxed run:      {ms(sandbox_times)}  (sandbox: auto, Landlock ABI {abi})")
    print(f"unsandboxed run:    {ms(tool_times)}  (sandbox: off)")
    print(
        f"sandbox ratio:      {sandbox_mean / tool_mean:8.3f}  (mean; "
        f"{sandbox_mean * 1000:.3f} ms against the goal {goal * 1000:.3f} ms = "
        f"{factor}x + {extra * 1000:g} ms: {'met' if sandbox_mean <= goal else 'NOT met'})"
    )
    builds: list[float] = []
    starts: list[float] = []
    policy = sandbox.make_policy(confined.settings.sandbox_config(), confined.cwd, dict(os.environ))
    for _ in range(20):
        t = time.perf_counter()
        ruleset = sandbox.Ruleset(
            abi, policy, sandbox.covers(policy) if sandbox.namespaces_wanted() else None
        )
        builds.append(time.perf_counter() - t)
        t = time.perf_counter()
        launcher = ruleset.launcher()
        starts.append(time.perf_counter() - t)
        launcher.close(wait=5)
        ruleset.close()
    print(
        f"ruleset build:      {ms(builds)}  (once per project; {len(sandbox.plan(policy))} rules)"
    )
    print(f"launcher start:     {ms(starts)}  (once per ruleset: request to ready, confined)")


if __name__ == "__main__":
    if "--quick" in sys.argv:
        asyncio.run(main(20))
    else:
        asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
