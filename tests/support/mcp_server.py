"""A small MCP server for the tests, made with the SDK's own FastMCP: what mm meets in a real one.

    python tests/support/mcp_server.py                 # on stdio
    python tests/support/mcp_server.py --http PORT     # over streamable HTTP on 127.0.0.1:PORT/mcp

Tools: `echo`, `add`, `fail` (the tool raises: an isError result), `sleep` (answers after that
many seconds), `crash` (the process exits in the middle of the call), `picture` (an image and
a caption), `env` (a variable of the server's environment, or `(unset)`), `untyped` (an input
schema without `"type": "object"`), `grow` (adds a tool `grown`, and says so:
notifications/tools/list_changed).

The environment steers the process itself: MCP_TEST_PIDFILE, a file it writes its pid to at
start; MCP_TEST_START_DELAY, seconds it sleeps before it serves (a server that hangs at start);
MCP_TEST_START_GATE, a file it waits for before it serves (a server ready when the test says);
MCP_TEST_EXIT, a line it writes on stderr before it exits at once with status 3 (a server that
cannot start); MCP_TEST_LINGER, set: it outlives the end of its input by a minute (so that a
test sees mm stop it, not the end of mm's pipes); MCP_TEST_ALIAS, a name `echo` also answers to;
MCP_TEST_SLEEP_LOG, a file `sleep` writes `sleep started` to, then `sleep cancelled` when its
call is cancelled; MCP_TEST_STREAMS (over HTTP), a file it writes `GET` to when it has begun the
stream a client keeps open to hear it (the response's headers sent).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from mcp.server.fastmcp import Context, FastMCP, Image

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8cfc0f01f0005000200a5e2b1e80000000049454e44ae426082"
)

server = FastMCP("mm-tests", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """The sum of two integers."""
    return a + b


@server.tool()
def fail(reason: str) -> str:
    """Always fails, with the reason given."""
    raise ValueError(reason)


@server.tool()
async def sleep(seconds: float) -> str:
    """Answers after that many seconds."""
    _log_sleep("sleep started")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:  # the client's notifications/cancelled, or the end
        _log_sleep("sleep cancelled")
        raise
    return f"slept {seconds:g} s"


@server.tool()
async def grow(ctx: Context) -> str:  # type: ignore[type-arg]
    """Adds the tool `grown` and says the list of tools changed."""
    server.add_tool(echo, name="grown", description="Say the text back, as grown.")
    await ctx.session.send_tool_list_changed()
    return "grown"


def _log_sleep(line: str) -> None:
    log = os.environ.get("MCP_TEST_SLEEP_LOG")
    if log:
        with open(log, "a") as f:
            f.write(f"{line}\n")


@server.tool()
def crash() -> str:
    """The server's process exits in the middle of the call."""
    print("crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def picture():  # noqa: ANN201 - no return type: FastMCP then sends the parts as they are
    """A one-pixel picture and its caption."""
    return [Image(data=PNG, format="png"), "a red dot"]


@server.tool()
def env(name: str) -> str:
    """A variable of the server's environment."""
    return os.environ.get(name, "(unset)")


@server.tool()
def untyped(query: str) -> str:
    """Its input schema names no type (some servers leave `"type": "object"` out)."""
    return f"looked up {query}"


server._tool_manager.get_tool("untyped").parameters.pop("type")  # type: ignore[union-attr]  # noqa: SLF001


def _noting_streams(app, path: str):  # noqa: ANN001, ANN202 - an ASGI app around another
    """`app`, writing `GET` to `path` once the answer to a GET (the stream a client keeps
    open) has begun."""

    async def noted(scope, receive, send):  # noqa: ANN001, ANN202
        if scope["type"] != "http" or scope["method"] != "GET":
            return await app(scope, receive, send)

        async def sending(message):  # noqa: ANN001, ANN202
            await send(message)
            if message["type"] == "http.response.start":
                with open(path, "a") as f:
                    f.write("GET\n")

        return await app(scope, receive, sending)

    return noted


def main() -> None:
    pidfile = os.environ.get("MCP_TEST_PIDFILE")
    if pidfile:
        with open(pidfile, "a") as f:
            f.write(f"{os.getpid()}\n")
    exit_line = os.environ.get("MCP_TEST_EXIT")
    if exit_line:
        print(exit_line, file=sys.stderr, flush=True)
        os._exit(3)
    alias = os.environ.get("MCP_TEST_ALIAS")
    if alias:
        server.add_tool(echo, name=alias, description=f"Say the text back, as {alias}.")
    time.sleep(float(os.environ.get("MCP_TEST_START_DELAY") or 0))
    gate = os.environ.get("MCP_TEST_START_GATE")
    while gate and not os.path.exists(gate):
        time.sleep(0.02)
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        import uvicorn

        app = server.streamable_http_app()
        streams = os.environ.get("MCP_TEST_STREAMS")
        served = _noting_streams(app, streams) if streams else app
        uvicorn.run(served, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run()
    if os.environ.get("MCP_TEST_LINGER"):
        time.sleep(60)


if __name__ == "__main__":
    main()
