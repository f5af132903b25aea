"""The start-up check of a configured server (`server_check.check_server`), both ways it asks:
a server on this machine over plain http without httpx (`plain_http.local_answer`), any other
through httpx. Each case runs both ways against the same real sockets (the scripted server, a
closed port, a socket that closes or never answers) and must say the same words: a person's
note does not depend on which way mm asked."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from support.scripted_server import Error, ScriptedServer, closed_port_url

from mm_tui.engine import server_check
from mm_tui.engine.server_check import check_server


@pytest.fixture(params=["plain", "httpx"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which way the check asks: "httpx" sends this machine's servers through httpx too, as it
    sends a server elsewhere."""
    if request.param == "httpx":
        monkeypatch.setattr(server_check, "plain_local", lambda url: False)
    return request.param


async def test_a_closed_port_is_not_answering_and_says_how_to_fix_it(way: str) -> None:
    url = closed_port_url()
    check = await check_server(url)
    assert not check.answering
    assert check.base_url == url
    assert check.note == (
        f"could not connect to the model server at {url} (connection refused). Start the "
        "server, or point mm at a running one with --base-url URL (or baseUrl in "
        ".mm/config.yaml)"
    )


async def test_a_server_that_answers_is_fine_and_says_nothing(way: str) -> None:
    with ScriptedServer(api_key="sk-local") as server:
        check = await check_server(server.base_url, api_key="sk-local")
        asked = [r for r in server.lookups if r.path.endswith("/models")]
        assert check.answering and check.note == "" and check.base_url == server.base_url
    assert [r.headers.get("authorization") for r in asked] == ["Bearer sk-local"]


async def test_a_refused_key_is_left_to_the_first_request(way: str) -> None:
    with ScriptedServer(api_key="sk-right") as server:
        check = await check_server(server.base_url, api_key="sk-wrong")
    assert check.answering and check.note == ""


async def test_a_models_list_that_is_not_json_still_answers(way: str) -> None:
    page = Error(200, body="<html>a model server's own page</html>")
    with ScriptedServer(routes={("GET", "/v1/models"): page}) as server:
        check = await check_server(server.base_url)
    assert check.answering and check.note == ""


async def test_a_base_url_missing_v1_is_used_with_v1_and_said(way: str) -> None:
    # the root's /models is not there (as with Ollama at http://localhost:11434)
    with ScriptedServer(routes={("GET", "/models"): Error(404, "404 page not found")}) as server:
        check = await check_server(server.root_url)
        root, base = server.root_url, server.base_url
    assert check.answering
    assert check.base_url == base  # the root with /v1
    assert check.note == (
        f"the base URL {root} lacks /v1: using {base} — set baseUrl "
        "(or --base-url) to it to make this note go"
    )


async def test_a_server_with_no_models_anywhere_is_said_to_check_the_base_url(way: str) -> None:
    with ScriptedServer(models=None, prefix="/api") as server:
        check = await check_server(server.base_url)
        base = server.base_url
    assert check.answering  # something answered: the requests will say the rest
    assert check.note == (
        f"the server at {base} answered GET {base}/models with 404 — "
        "OpenAI-compatible servers serve under a path such as /v1: check the base URL"
    )


@asynccontextmanager
async def _listening(handle) -> AsyncIterator[str]:  # noqa: ANN001
    """A socket on this machine that `handle` answers (or not), as a base URL."""
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.close()
        if sys.version_info >= (3, 12):
            server.close_clients()


async def test_a_socket_that_closes_without_answering_is_said_so(way: str) -> None:
    """Something listens there but is no HTTP server (or stopped mid-request)."""

    async def close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.close()

    async with _listening(close) as url:
        check = await check_server(url)
    assert not check.answering
    assert check.note == (
        f"the model server at {url} closed the connection without answering (is it an "
        "OpenAI-compatible server, and is it still running?)"
    )


async def test_a_server_that_never_answers_is_given_up_on_in_its_time(way: str) -> None:
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)  # read nothing, answer nothing: the check's own timeout ends it

    async with _listening(hold) as url:
        check = await check_server(url, timeout=0.3)
        for writer in held:
            writer.close()
    assert not check.answering
    assert check.note == (
        f"the model server at {url} did not answer within 0.3 s. Start the server, or point "
        "mm at a running one with --base-url URL (or baseUrl in .mm/config.yaml)"
    )
