"""Before the first request: is the configured base URL one mm can use, and does a server answer
there? Without this, a dead server looked healthy in the header and showed only a spinner for ten
seconds of retries, and a base URL missing its scheme or its `/v1` failed with a message that
did not say what to change.

Only a configured server is checked: a detected one has just answered detection."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import httpx

from mm_tui.core.frozen import frozen
from mm_tui.engine.servers import (
    HOW_TO_POINT,
    USER_AGENT,
    connection_problem,
    is_loopback,
    model_ids,
)
from mm_tui.engine.tls import tls_context

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
    raises: a server that cannot be asked is an ordinary outcome, said in the note."""
    base = base_url.strip().rstrip("/")
    headers = {"User-Agent": USER_AGENT}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    async with httpx.AsyncClient(
        timeout=httpx.Timeout(timeout),
        trust_env=not is_loopback(base),
        headers=headers,
        verify=tls_context(),
    ) as client:

        async def models(url: str) -> httpx.Response:
            return await client.get(f"{url}/models")

        try:
            answer = await models(base)
        except httpx.TimeoutException:
            return ServerCheck(
                base,
                False,
                f"the model server at {base} did not answer within {timeout:g} s. "
                + HOW_TO_POINT.rstrip("."),
            )
        except (httpx.RequestError, OSError) as exc:
            message, hint = connection_problem(base, exc)
            return ServerCheck(base, False, f"{message}. {hint}".strip().rstrip("."))
        if answer.status_code == 200 or answer.status_code in (401, 403):
            return ServerCheck(base, True)  # a wrong key is said by the first request
        if urlsplit(base).path.rstrip("/").endswith("/v1"):
            return ServerCheck(base, True)  # a server without /models: the requests will tell
        return await _without_v1(base, answer.status_code, models)


async def _without_v1(
    base: str, status: int, models: Callable[[str], Awaitable[httpx.Response]]
) -> ServerCheck:
    """A server that answered `/models` with neither the list nor a refusal: a base URL that
    lacks its `/v1` is taken with it, when that one lists the models."""
    try:
        again = await models(base + "/v1")
        listed = again.status_code == 200 and model_ids(again.json()) is not None
    except (httpx.HTTPError, OSError, ValueError):
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
