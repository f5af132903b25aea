"""Before the first request: is the configured base URL one mm can use, and does a server answer
there? Without this, a dead server looked healthy in the header and showed only a spinner for ten
seconds of retries, and a base URL missing its scheme or its `/v1` failed with a message that
did not say what to change.

Only a configured server is checked: a detected one has just answered detection."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from mm_tui.core.frozen import frozen
from mm_tui.engine.plain_http import local_answer, plain_local
from mm_tui.engine.servers import (
    HOW_TO_POINT,
    USER_AGENT,
    connection_problem,
    is_loopback,
    model_ids,
)

if TYPE_CHECKING:
    import httpx

SUFFIX = "/chat/completions"


def base_url_problem(base_url: str) -> str | None:
    """What makes `base_url` unusable whatever the server does, worded with the URL to use
    instead; None when it may work. `localhost:11434/v1` is the common case: it parses as the
    scheme `localhost` and an empty host, and httpx refuses it only when the first request goes."""
    text = base_url.strip()
    parts = urlsplit(text)
    if parts.scheme in ("http", "https") and parts.netloc:
        if parts.path.rstrip("/").endswith(SUFFIX):
            fixed = text.rstrip("/")[: -len(SUFFIX)]
            return (
                f'mm: the base URL "{text}" ends in {SUFFIX}, which mm adds itself — '
                f"use {fixed} (--base-url, or baseUrl in .mm/config.yaml)"
            )
        return None
    rest = text.split("://", 1)[1] if "://" in text else text
    host = urlsplit(f"http://{rest}").hostname or ""
    scheme = "http" if is_loopback(f"http://{host}") or "." not in host else "https"
    fixed = f"{scheme}://{rest}"
    return (
        f'mm: the base URL "{text}" does not start with http:// or https:// — use {fixed} '
        "(--base-url, or baseUrl in .mm/config.yaml)"
    )


@frozen
class ServerCheck:
    """`base_url`: the one to use (the configured one, or with `/v1` added when only that
    answers); `answering`: a server answered at all; `note`: what start-up says, "" if nothing."""

    base_url: str
    answering: bool
    note: str = ""


async def check_server(
    base_url: str, api_key: str | None = None, timeout: float = 2.0
) -> ServerCheck:
    """Ask `GET {base_url}/models`, the one endpoint every OpenAI-compatible server has. Never
    raises: a server that cannot be asked is an ordinary outcome, said in the note.

    A server on this machine over plain http (a configured Ollama, llama.cpp…) is asked without
    httpx, as detection asks it (plain_http.py): the window is then ready without importing
    httpx or making the TLS context, which load once it is (docs/performance.md)."""
    base = base_url.strip().rstrip("/")
    headers = {"User-Agent": USER_AGENT}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    if plain_local(base):
        return await _check(base, _plainly(base, headers, timeout))
    import httpx

    from mm_tui.engine.tls import tls_context

    async with httpx.AsyncClient(
        timeout=httpx.Timeout(timeout),
        trust_env=not is_loopback(base),
        headers=headers,
        verify=tls_context(),
    ) as client:
        return await _check(base, _through_httpx(base, client, timeout))


class _Unasked(Exception):
    """No answer came from the server: the note that says why."""


Models = Callable[[str], Awaitable[tuple[int, bytes]]]
"""GET `{url}/models`: the status and the body as it came; raises `_Unasked`. The body is read
as JSON only where it matters (`_without_v1`), not at every start-up's check."""


def _timed_out(base: str, timeout: float) -> _Unasked:
    return _Unasked(
        f"the model server at {base} did not answer within {timeout:g} s. "
        + HOW_TO_POINT.rstrip(".")
    )


def _unreached(base: str, exc: BaseException) -> _Unasked:
    message, hint = connection_problem(base, exc)
    return _Unasked(f"{message}. {hint}".strip().rstrip("."))


def _plainly(base: str, headers: dict[str, str], timeout: float) -> Models:
    async def models(url: str) -> tuple[int, bytes]:
        try:
            return await local_answer(f"{url}/models", headers=headers, timeout=timeout)
        except TimeoutError:
            raise _timed_out(base, timeout) from None
        except (OSError, ValueError) as exc:
            raise _unreached(base, exc) from None

    return models


def _through_httpx(base: str, client: httpx.AsyncClient, timeout: float) -> Models:
    import httpx

    async def models(url: str) -> tuple[int, bytes]:
        try:
            answer = await client.get(f"{url}/models")
        except httpx.TimeoutException:
            raise _timed_out(base, timeout) from None
        except (httpx.RequestError, OSError) as exc:
            raise _unreached(base, exc) from None
        return answer.status_code, answer.content

    return models


async def _check(base: str, models: Models) -> ServerCheck:
    try:
        status, _ = await models(base)
    except _Unasked as unasked:
        return ServerCheck(base, False, str(unasked))
    if status == 200 or status in (401, 403):
        return ServerCheck(base, True)  # a wrong key is said by the first request
    if urlsplit(base).path.rstrip("/").endswith("/v1"):
        return ServerCheck(base, True)  # a server without /models: the requests will tell
    return await _without_v1(base, status, models)


async def _without_v1(base: str, status: int, models: Models) -> ServerCheck:
    """A server that answered `/models` with neither the list nor a refusal: a base URL that
    lacks its `/v1` is taken with it, when that one lists the models."""
    try:
        again, content = await models(base + "/v1")
        listed = again == 200 and model_ids(json.loads(content)) is not None
    except (_Unasked, ValueError):  # ValueError: not JSON
        listed = False
    if listed:
        return ServerCheck(
            base + "/v1",
            True,
            f"the base URL {base} lacks /v1: using {base}/v1 — set baseUrl (or "
            "--base-url) to it to make this note go",
        )
    return ServerCheck(
        base,
        True,
        f"the server at {base} answered GET {base}/models with {status} — "
        "OpenAI-compatible servers serve under a path such as /v1: check the base URL",
    )
