"""The fixed prompt's overhead: the tokens of the system prompt and the tool declarations that
every request carries, at windows of 2k, 4k, 8k and 32k, without MCP servers and with five,
next to the budget mm keeps it within (max(800 tokens, 15% of the window)) and next to what the
full forms cost (all that mm sent before the budget).

mm is put together by the real start-up (`startup.start`) on the scripted model server of the
tests, which serves llama.cpp's `/tokenize`; the five MCP servers are real ones on stdio: the
tests' FastMCP server (tests/support/mcp_server.py, nine tools) under five names, one of them
replaced by the protocol's reference server (@modelcontextprotocol/server-everything) when
`make test` installed it. For each window mm counts and chooses its form as before a request,
then one turn is sent, and the fixed part of the request that reached the server is counted
again: it must be what mm said it was (the bench fails otherwise: a check on what it measured).

Tokens are counted by a real tokenizer when one is there offline: SmolLM2-135M's (the e2e
tests' model, through llama-cpp-python in the e2e environment, `make e2e`; $MM_E2E_PYTHON names
another), loaded with its vocabulary only. Without it, by the scripted server's rule, a token per
4 characters; the bench says which.

Run: .venv/bin/python bench/bench_prompt_overhead.py  (--quick: the 2k and 32k windows)
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from support.mcp_helpers import EVERYTHING, SERVER  # noqa: E402
from support.scripted_server import Reply, ScriptedServer, scripted_text_tokens  # noqa: E402

from mm_tui.config import Settings  # noqa: E402
from mm_tui.engine.context_window import ContextWindow  # noqa: E402
from mm_tui.engine.fixed_prompt import fixed_budget, fixed_text  # noqa: E402
from mm_tui.engine.turn import Engine  # noqa: E402
from mm_tui.startup import start  # noqa: E402

WINDOWS = (2048, 4096, 8192, 32768)
QUICK_WINDOWS = (2048, 32768)
NAMES = ("files", "notes", "web", "mail", "shop")
MODEL = "scripted-model"

_TOKENIZER = r"""
import json, sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], vocab_only=True, verbose=False)
print("ready", flush=True)
for line in sys.stdin:
    text = json.loads(line)
    print(len(llm.tokenize(text.encode(), add_bos=False, special=False)), flush=True)
"""


class RealTokenizer:
    """SmolLM2's tokenizer in a process of the e2e environment: a text in, its count out."""

    def __init__(self, python: Path, model: Path) -> None:
        self.proc = subprocess.Popen(
            [str(python), "-c", _TOKENIZER, str(model)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the tokenizer did not start")
        self.lock = threading.Lock()  # the server answers in a thread per connection

    def __call__(self, text: str) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self.lock:
            self.proc.stdin.write(json.dumps(text) + "\n")
            self.proc.stdin.flush()
            return int(self.proc.stdout.readline())

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=10)


def real_tokenizer() -> tuple[Any, str]:
    """SmolLM2's tokenizer where the e2e environment is, else the scripted rule; and its name."""
    from e2e.llama_server import ServerUnavailable, e2e_python, find_model

    try:
        python = e2e_python()
        model = find_model(python)
        return RealTokenizer(python, model), f"SmolLM2-135M's tokenizer ({model.name})"
    except (ServerUnavailable, OSError, RuntimeError, subprocess.SubprocessError) as exc:
        return None, f"the scripted rule, a token per 4 characters (no real tokenizer: {exc})"


def five_servers() -> tuple[dict[str, Any], str]:
    """Five MCP servers on stdio: the tests' FastMCP server under five names, the reference
    server in place of the last where it is installed."""
    servers: dict[str, Any] = {
        name: {"command": sys.executable, "args": [str(SERVER)]} for name in NAMES
    }
    import shutil

    node = shutil.which("node")
    if node and EVERYTHING.is_file():
        del servers[NAMES[-1]]
        servers["everything"] = {"command": node, "args": [str(EVERYTHING), "stdio"]}
        return servers, "four FastMCP test servers and the reference server-everything"
    return servers, "five FastMCP test servers (server-everything is not installed)"


def full_forms(engine: Engine, window: int) -> str:
    """The fixed text mm sent before the budget: the whole prompt and every declaration (the
    todo tool left out below 16k, as `todoTool: auto` does)."""
    tools = [
        tool.declaration()
        for tool, _ in engine.registry.declared_tools()
        if window >= 16384 or tool.name != "todo"
    ]
    return fixed_text(engine.session.messages[0]["content"], tools)


async def measure(
    server: ScriptedServer, servers: dict[str, Any], windows: tuple[int, ...], count: Any
) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="mm-bench-overhead-") as folder:
        cwd = Path(folder)
        settings = Settings(
            baseUrl=server.base_url,
            model=MODEL,
            sessionsDir=str(cwd / ".mm" / "sessions"),
            mcpServers=servers,
        )
        engine = (await start(settings, cwd)).engine
        try:
            await engine.registry.ready()
            for window in windows:
                rows.append(await one_window(engine, server, window, count))
        finally:
            await engine.aclose()
    return rows


async def one_window(
    engine: Engine, server: ScriptedServer, window: int, count: Any
) -> dict[str, Any]:
    context = engine.context
    context.meter.window = ContextWindow(window, "the bench")
    await context.count_fixed()
    fit = context.fit_now()
    assert fit is not None
    server.script(Reply("ok"))
    await engine.run_turn("hello", lambda event: None)
    body = server.requests[-1].body
    sent = count(fixed_text(body["messages"][0]["content"], body.get("tools", [])))
    if sent != fit.tokens or not fit.counted:
        raise SystemExit(
            f"at {window:,}: mm counted {fit.tokens:,} (counted: {fit.counted}), the request "
            f"carried {sent:,}"
        )
    form = "full" if not fit.short else "short" + (" + find_tool" if fit.left_out else "")
    mcp = sum(1 for _, sourced in engine.registry.declared_tools() if sourced)
    return {
        "window": window,
        "budget": fixed_budget(window),
        "before": count(full_forms(engine, window)),
        "after": sent,
        "form": form,
        "left": f"{len(fit.left_out)} of {mcp}" if mcp else "-",
    }


def main() -> None:
    from private_home import private_home

    private_home()  # a home of its own: none of the person's is read or written
    quick = "--quick" in sys.argv
    windows = QUICK_WINDOWS if quick else WINDOWS
    tokenizer, said = real_tokenizer()
    count = tokenizer or scripted_text_tokens
    servers, which = five_servers()
    print(f"tokens counted by {said}")
    print(f"MCP servers: {which}")
    try:
        results = []
        for label, configured in (("none", {}), ("five", servers)):
            with ScriptedServer(
                context_window=max(windows), serves="llama.cpp", tokenizer=count
            ) as server:
                rows = asyncio.run(measure(server, configured, windows, count))
            results += [{**row, "mcp": label} for row in rows]
    finally:
        if tokenizer is not None:
            tokenizer.close()
    print()
    print(
        f"{'window':>8} {'MCP':>5} {'budget':>7} {'before':>7} {'after':>7} {'of budget':>10}  form / left out"
    )
    for r in results:
        share = f"{r['after'] / r['budget']:.2f}x"
        within = "" if r["after"] <= r["budget"] else "  OVER the budget"
        print(
            f"{r['window']:>8,} {r['mcp']:>5} {r['budget']:>7,} {r['before']:>7,} {r['after']:>7,} "
            f"{share:>10}  {r['form']}, left out {r['left']}{within}"
        )
    print()
    print("before: the full forms, all mm sent before the budget; after: what the request carried.")


if __name__ == "__main__":
    main()
