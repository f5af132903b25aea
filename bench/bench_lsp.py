"""What the lsp tool costs on top of the language server's own answers.

For each server and action: the first call (the server started, initialized and its project
read, all included) and the mean of later calls, each against the time the server itself took
to answer on the wire (from the request written to its answer read, summed over the requests of
the call). The ratio is the tool's overhead: reading and syncing the files, finding the symbol,
converting positions, formatting. Figures only; nothing is asserted.

Run: .venv/bin/python bench/bench_lsp.py [calls, 20 by default]  (--quick: 2 calls: a rename
     there and back)
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mm_tui.config import LspServer, Settings  # noqa: E402
from mm_tui.tools.base import ToolContext  # noqa: E402
from mm_tui.tools.lsp import LspArgs, LspTool  # noqa: E402

FIXTURES = ROOT / "tests" / "lsp_fixtures"

SERVERS = {
    "pylsp": (LspServer(name="pylsp", command="pylsp", extensions=[".py"]), "python"),
    "pyright": (
        LspServer(
            name="pyright", command="basedpyright-langserver", args=["--stdio"], extensions=[".py"]
        ),
        "python",
    ),
    "clangd": (LspServer(name="clangd", command="clangd", extensions=[".c", ".h"]), "c"),
}

CALLS = {
    "python": {
        "definition": {"path": "main.py", "symbol": "make_person"},
        "references": {"path": "greeter.py", "symbol": "Person"},
        "hover": {"path": "main.py", "symbol": "make_person"},
        "symbols": {"path": "greeter.py"},
        "diagnostics": {"path": "broken.py"},
        "rename": {
            "path": "greeter.py",
            "symbol": "make_person",
            "names": ("build", "make_person"),
        },
    },
    "c": {
        "definition": {"path": "main.c", "symbol": "greet"},
        "references": {"path": "greet.h", "symbol": "greet"},
        "hover": {"path": "main.c", "symbol": "greet"},
        "symbols": {"path": "greet.h"},
        "diagnostics": {"path": "broken.c"},
        "rename": {"path": "main.c", "symbol": "alice", "names": ("carol", "alice")},
    },
}


def project(fixture: str) -> Path:
    root = Path(tempfile.mkdtemp(prefix="bench-lsp-"))
    shutil.copytree(FIXTURES / fixture, root, dirs_exist_ok=True)
    if fixture == "c":
        database = [
            {"directory": str(root), "file": p.name, "arguments": ["cc", "-c", p.name]}
            for p in sorted(root.glob("*.c"))
        ]
        (root / "compile_commands.json").write_text(json.dumps(database))
    return root


def args_for(action: str, spec: dict, turn: int) -> LspArgs:
    fields = {k: v for k, v in spec.items() if k != "names"}
    if action == "rename":  # back and forth, so that every call renames something
        old, new = (spec["symbol"], spec["names"][0])
        if turn % 2:
            old, new = spec["names"][0], spec["names"][1]
        fields.update(symbol=old, new_name=new)
    return LspArgs(action=action, **fields)


async def timed(tool: LspTool, args: LspArgs, ctx: ToolContext) -> tuple[float, float, str]:
    """(seconds for the call, seconds on the wire during it, output)."""
    running = tool.manager.running()
    before = running[0].client.wire.seconds if running and running[0].client else 0.0
    start = time.perf_counter()
    result = await tool.run(args, ctx)
    elapsed = time.perf_counter() - start
    client = tool.manager.running()[0].client
    assert client is not None  # the call just ran on it
    wire = client.wire.seconds - (before if running else 0.0)
    return elapsed, wire, result.output


FAILED: list[str] = []  # the server and action of each call that failed


async def bench_server(name: str, calls: int) -> None:
    config, fixture = SERVERS[name]
    if shutil.which(config.command) is None:
        print(f"{name}: {config.command} is not installed (make lsp-servers) — skipped")
        return
    print(f"\n{name}")
    print(
        f"  {'action':<12} {'first call':>10} {'on wire':>9}   "
        f"{'later (mean)':>12} {'on wire':>9} {'ratio':>6}"
    )
    for action, spec in CALLS[fixture].items():
        root = project(fixture)
        tool = LspTool([config], root)
        ctx = ToolContext(cwd=root, settings=Settings())
        try:
            first, first_wire, output = await timed(tool, args_for(action, spec, 0), ctx)
            if output.startswith("[lsp"):
                print(f"  {action:<12} failed: {output}")
                FAILED.append(f"{name} {action}")
                continue
            later: list[float] = []
            wire: list[float] = []
            for turn in range(1, calls + 1):
                elapsed, on_wire, _ = await timed(tool, args_for(action, spec, turn), ctx)
                later.append(elapsed)
                wire.append(on_wire)
        finally:
            await tool.aclose()
            shutil.rmtree(root, ignore_errors=True)
        mean = statistics.mean(later)
        mean_wire = statistics.mean(wire)
        ratio = f"{mean / mean_wire:5.2f}x" if mean_wire > 0 else "     -"
        wire_text = f"{mean_wire * 1000:7.2f}ms" if mean_wire > 0 else "   none  "
        print(
            f"  {action:<12} {first:9.3f}s {first_wire:8.3f}s   "
            f"{mean * 1000:10.2f}ms {wire_text} {ratio}"
        )


async def main(calls: int) -> None:
    from private_home import private_home

    private_home()  # a home of its own: none of the person's is read or written
    bin_dirs = [str(Path(sys.prefix) / "bin"), str(ROOT / ".lsp" / "node_modules" / ".bin")]
    os.environ["PATH"] = os.pathsep.join([*bin_dirs, os.environ.get("PATH", "")])
    print(f"calls per action after the first: {calls}")
    print("ratio: a later call's time over its time on the wire (the server answering)")
    print("diagnostics of a server that publishes: an unchanged file needs no request (none)")
    print(
        "rename, later calls: each one starts by waiting for the server to digest the files the "
        "previous one wrote (a model's thinking time hides that wait)"
    )
    for name in SERVERS:
        await bench_server(name, calls)
    if FAILED:  # a language server that no longer answers is a broken tool, not a figure
        raise SystemExit(f"failed: {', '.join(FAILED)}")


if __name__ == "__main__":
    if "--quick" in sys.argv:
        asyncio.run(main(2))
    else:
        asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20))
