"""Start-up asks servers on this machine without httpx: detection and the context
window go over plain http to loopback addresses as one HTTP/1.1 exchange on an asyncio stream
(`plain_http.local_json`), and the model client makes its httpx client at its first request. What
goes elsewhere (https, another host) still goes through httpx and the verifying TLS context."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.scripted_server import ScriptedServer, closed_port_url

from mm_tui.engine.plain_http import local_json, parse_http_answer, plain_local
from mm_tui.engine.provider import OpenAIProvider

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import asyncio, json, sys
from mm_tui.engine import tls
from mm_tui.engine.servers import Preset, detect_local_server
from mm_tui.engine.provider import OpenAIProvider

async def main():
    presets = [Preset("Ollama", sys.argv[1]), Preset("llama.cpp", sys.argv[2])]
    found = await detect_local_server(presets=presets)
    client = OpenAIProvider(found.base_url, found.model, provider=found.name)
    window = await client.read_context_window()
    await client.aclose()
    loaded = sorted(m for m in ("httpx", "httpcore", "anyio", "certifi") if m in sys.modules)
    print(json.dumps({"found": [found.name, found.model], "window": window.tokens,
                      "loaded": loaded, "tls": tls._context is not None}))

asyncio.run(main())
"""


def test_detecting_a_local_server_loads_neither_httpx_nor_the_tls_context() -> None:
    """Real detection (a closed port, then the scripted llama.cpp server) and the context
    window, in a fresh process: the server is found and its window read, and neither httpx (with
    httpcore and anyio) nor the certificate authorities were loaded for it."""
    with ScriptedServer(models=["m1"], serves="llama.cpp", context_window=32768) as server:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, closed_port_url(), server.base_url],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
    assert json.loads(out.stdout) == {
        "found": ["llama.cpp", "m1"],
        "window": 32768,
        "loaded": [],
        "tls": False,
    }


def test_only_plain_http_to_this_machine_skips_httpx() -> None:
    assert plain_local("http://localhost:11434/v1")
    assert plain_local("http://127.0.0.1:8080/v1")
    assert plain_local("http://[::1]:8080/v1")
    assert not plain_local("https://localhost:8443/v1")  # TLS: httpx and the verifying context
    assert not plain_local("http://10.1.2.3:8080/v1")  # another host: the proxy settings apply
    assert not plain_local("https://api.openai.com/v1")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", (200, b"{}")),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}extra", (200, b"{}")),
        (b"HTTP/1.0 404 Not Found\r\n\r\nnope", (404, b"nope")),  # read to the close
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b'3\r\n{"a\r\n5;x=y\r\n": 1}\r\n0\r\n\r\n',
            (200, b'{"a": 1}'),
        ),
    ],
)
def test_an_http_answer_is_read_by_its_framing(raw: bytes, expected: tuple[int, bytes]) -> None:
    assert parse_http_answer(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        b"SSH-2.0-OpenSSH_9.6\r\n",  # not HTTP
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}",  # cut short
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{}",  # cut short
    ],
)
def test_a_broken_answer_is_a_value_error(raw: bytes) -> None:
    with pytest.raises(ValueError):
        parse_http_answer(raw)


async def test_a_server_that_keeps_the_connection_open_is_read_to_the_end_of_its_body() -> None:
    """A server that ignores `Connection: close` (chunked, then silence): the answer ends at its
    last chunk, not at the timeout, which is long here so that waiting for it would fail."""
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.readuntil(b"\r\n\r\n"))
        body = b'{"data": [{"id": "m"}]}'
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        await writer.drain()
        await asyncio.sleep(60)  # kept open

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        answer = await asyncio.wait_for(
            local_json(f"http://127.0.0.1:{port}/v1/models", timeout=30), 20
        )
    finally:
        server.close()
    assert answer == (200, {"data": [{"id": "m"}]})
    assert seen[0].startswith(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:")


async def test_the_model_client_makes_its_http_client_at_the_first_request() -> None:
    with ScriptedServer() as server:
        client = OpenAIProvider(server.base_url, "m")
        assert client._http is None  # made by start-up without httpx
        chunks = [c async for c in client.stream([{"role": "user", "content": "hi"}], [])]
        assert client._http is not None
        await client.aclose()
    assert chunks


async def test_a_model_client_never_used_closes_without_making_one() -> None:
    client = OpenAIProvider(closed_port_url(), "m")
    await client.aclose()
    assert client._http is None


async def test_a_header_with_a_line_break_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(ValueError, match="line break"):
        await local_json(closed_port_url() + "/models", headers={"Authorization": "a\r\nX: y"})


def test_prepare_loads_what_the_first_request_needs_in_a_thread() -> None:
    code = (
        "import json, sys, threading; from mm_tui.engine import provider; "
        "before = 'httpx' in sys.modules; provider.prepare(); "
        "[t.join() for t in threading.enumerate() if t.name == 'mm-http']; "
        "print(json.dumps([before, 'httpx' in sys.modules, "
        "'httpcore._backends.anyio' in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == [False, True, True]


def test_the_window_loads_markdown_in_a_thread_once_ready(tmp_path: Path) -> None:
    """The first answer's first frame does not wait for markdown-it and Rich's Markdown, nor
    its first code block for Pygments to compile its lexer: the window's boot (`mm --demo`'s,
    run in a fresh process that has drawn no Markdown) starts loading them in a thread once it
    has made the engine, and the thread makes the lexers of the common languages."""
    code = (
        "import asyncio, json, sys, threading; from pathlib import Path; from mm_tui import cli\n"
        "async def main():\n"
        "    before = 'markdown_it' in sys.modules\n"
        "    await cli.window_boot(cli.parser().parse_args(['--demo']), Path.cwd())()\n"
        "    await asyncio.sleep(0)\n"
        "    names = [t.name for t in threading.enumerate()]\n"
        "    [t.join() for t in threading.enumerate() if t.name == 'mm-markdown']\n"
        "    from pygments.lexers.python import PythonLexer\n"
        "    made = '_tokens' in PythonLexer.__dict__\n"  # compiled, by the thread
        "    print(json.dumps([before, 'mm-markdown' in names, 'markdown_it' in sys.modules,"
        " made]))\n"
        "asyncio.run(main())\n"
    )
    env = {**os.environ, "HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [False, True, True, True]


@pytest.mark.parametrize("configured", [False, True])
def test_a_local_server_is_ready_without_httpx_and_its_tls_context(
    tmp_path: Path, configured: bool
) -> None:
    """Importing httpx and loading the certificate authorities were a third of the way from
    the first frame to ready, and a server on this machine is asked over plain http, detected
    or configured: the window's boot (in a fresh process) loads neither on its way to ready,
    and starts making the context in a thread once ready, so that the first request does not
    make it while it waits. Nor does it import hashlib (OpenSSL's digests: the project's key
    is hashed by CPython's own SHA-256), nor make the tools in a thread beside a server that
    answers within milliseconds (the two took turns at the GIL: asyncio's `to_thread` would
    leave its worker, `asyncio_0`, behind)."""
    code = (
        "import asyncio, json, sys, threading; from pathlib import Path; from mm_tui import cli\n"
        "from mm_tui.engine import servers, tls\n"
        "servers.PRESETS = (servers.Preset('Ollama', sys.argv[1]),"
        " servers.Preset('llama.cpp', sys.argv[2]))\n"
        "argv = ['--base-url', sys.argv[2], '--model', 'm1'] if sys.argv[3] == 'yes' else []\n"
        "async def main():\n"
        "    started = await cli.window_boot(cli.parser().parse_args(argv), Path.cwd())()\n"
        "    ready = ['mm-tls' in [t.name for t in threading.enumerate()],\n"
        "             tls._context is not None,\n"
        "             'httpx' in sys.modules, 'hashlib' in sys.modules,\n"
        "             any(t.name.startswith('asyncio_') for t in threading.enumerate())]\n"
        "    await asyncio.sleep(0)\n"
        "    after = 'mm-tls' in [t.name for t in threading.enumerate()]\n"
        "    [t.join() for t in threading.enumerate() if t.name == 'mm-tls']\n"
        "    print(json.dumps([started.engine.client.model, *ready, after,\n"
        "                      tls._context is not None]))\n"
        "asyncio.run(main())\n"
    )
    env = {**os.environ, "HOME": str(tmp_path)}
    with ScriptedServer(models=["m1"], serves="llama.cpp", context_window=32768) as server:
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                code,
                closed_port_url(),
                server.base_url,
                "yes" if configured else "no",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [
        "m1",
        False,  # no thread making the TLS context at ready
        False,  # nor a context made
        False,  # nor httpx
        False,  # nor hashlib
        False,  # the tools made on the loop, not in asyncio's thread
        True,  # the thread begun once ready
        True,  # which made it
    ]
