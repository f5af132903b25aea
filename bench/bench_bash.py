"""How much the bash tool costs on top of starting a shell.

The floor is the least any implementation must do: a temporary file, `bash -c true` started by
asyncio with its output going to that file, a wait and a read-back. The tool adds its process
group, its quiet environment and its markers; the goal is at most 1.3x the floor. Both are
measured in the same run, interleaved, so that a busy machine slows both alike.

Run: .venv/bin/python bench/bench_bash.py [calls]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mm_tui.config import Settings  # noqa: E402
from mm_tui.tools.base import ToolContext  # noqa: E402
from mm_tui.tools.bash import BashArgs, BashTool  # noqa: E402

GOAL = 1.3


async def bare_call() -> str:
    with tempfile.TemporaryFile(buffering=0) as out:
        proc = await asyncio.create_subprocess_exec(
            "bash", "-c", "true", stdout=out.fileno(), stderr=asyncio.subprocess.STDOUT
        )
        await proc.wait()
        size = os.fstat(out.fileno()).st_size
        return os.pread(out.fileno(), size, 0).decode("utf-8", errors="replace")


async def main(calls: int) -> None:
    tool = BashTool()
    ctx = ToolContext(cwd=Path.cwd(), settings=Settings())
    args = BashArgs(command="true")
    for _ in range(10):  # warm up: imports, caches, the child watcher
        await tool.run(args, ctx)
        await bare_call()

    tool_times: list[float] = []
    bare_times: list[float] = []
    for _ in range(calls):
        t = time.perf_counter()
        await tool.run(args, ctx)
        tool_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        await bare_call()
        bare_times.append(time.perf_counter() - t)

    tool_mean = statistics.mean(tool_times)
    bare_mean = statistics.mean(bare_times)
    print(f"calls:              {calls}")
    print(
        f"BashTool.run(true): {tool_mean * 1000:8.3f} ms mean, {statistics.median(tool_times) * 1000:8.3f} ms median"
    )
    print(
        f"bare bash -c true:  {bare_mean * 1000:8.3f} ms mean, {statistics.median(bare_times) * 1000:8.3f} ms median"
    )
    print(f"ratio (mean):       {tool_mean / bare_mean:8.3f}  (goal: <= {GOAL})")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
