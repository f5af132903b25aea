"""Which model server mm talks to: the well-known servers (presets), their display names, the
detection of one running on this machine, the list of models a server offers, and the wording
of a server that cannot be reached.

Kept apart from the streaming client because start-up and the base-URL check need it before
any request is made, and none of it depends on how an answer streams."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from mm_tui.core.frozen import frozen
from mm_tui.engine.model_stream import ModelError
from mm_tui.engine.plain_http import (
    LOOPBACK,
    ClosedUnanswered,
    is_loopback,
    local_json,
    plain_local,
)
from mm_tui.engine.server_errors import status_message

__all__ = [
    "HOW_TO_POINT",
    "PRESETS",
    "USER_AGENT",
    "DetectedServer",
    "Preset",
    "connection_problem",
    "detect_local_server",
    "find_preset",
    "is_loopback",
    "list_models",
    "model_ids",
    "provider_name",
]

USER_AGENT = "mm/0.1"
HOW_TO_POINT = (
    "Start the server, or point mm at a running one with --base-url URL "
    "(or baseUrl in .mm/config.yaml)."
)


@frozen
class Preset:
    """A well-known server. `local` presets are probed at start-up; OpenAI is not, since probing
    it would send a request over the internet at every start and it needs a key anyway."""

    name: str
    base_url: str
    local: bool = True


PRESETS: tuple[Preset, ...] = (
    Preset("Ollama", "http://localhost:11434/v1"),
    Preset("Docker Model Runner", "http://localhost:12434/engines/v1"),
    Preset("llama.cpp", "http://localhost:8080/v1"),
    Preset("LM Studio", "http://localhost:1234/v1"),
    Preset("vLLM", "http://localhost:8000/v1"),
    Preset("OpenAI", "https://api.openai.com/v1", local=False),
)


def find_preset(name_or_url: str, presets: Sequence[Preset] = PRESETS) -> Preset | None:
    """The preset a person means by a name ("ollama", "lm studio") or a base URL."""
    key = name_or_url.strip().lower().rstrip("/")
    for p in presets:
        if key in (p.name.lower(), p.name.lower().replace(" ", ""), p.base_url.lower()):
            return p
    return None


def provider_name(base_url: str, presets: Sequence[Preset] = PRESETS) -> str:
    """A display name for a server when the configuration gives none: the preset's name when the
    URL is a preset's (any loopback spelling, same port), else the host."""
    parts = urlsplit(base_url)
    host = (parts.hostname or "").lower()
    for p in presets:
        pp = urlsplit(p.base_url)
        same_host = host == pp.hostname or (host in LOOPBACK and pp.hostname in LOOPBACK)
        if same_host and parts.port == pp.port:
            return p.name
    return host or base_url


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception and what lies beneath it: httpx and anyio wrap the socket's own error."""
    out: list[BaseException] = []
    while exc is not None and exc not in out and len(out) < 10:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return out


def connection_problem(base_url: str, exc: BaseException) -> tuple[str, str]:
    """What went wrong, and the hint that follows it (after the count of tries, if any)."""
    if isinstance(exc, OSError | ValueError):  # asked without httpx (plain_http.py), or the OS's
        return _plain_problem(base_url, exc)
    import httpx  # loaded already: `exc` is one of its errors

    causes = _causes(exc)
    text = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.ConnectTimeout):
        why = "the connection timed out"
    elif isinstance(exc, httpx.ConnectError):
        if any(isinstance(c, ConnectionRefusedError) for c in causes):
            why = "connection refused"
        elif any(isinstance(c, socket.gaierror) for c in causes):
            why = f"unknown host {urlsplit(base_url).hostname!r}"
        else:
            why = text
    elif isinstance(exc, httpx.ReadError | httpx.WriteError | httpx.RemoteProtocolError) and (
        not str(exc) or "closed" in text.lower() or "disconnected" in text.lower()
    ):
        # the server took the connection and closed it without an HTTP answer: not a model
        # server's API there, or one that crashed or was stopped mid-request
        return (
            f"the model server at {base_url} closed the connection without answering "
            "(is it an OpenAI-compatible server, and is it still running?)",
            "",
        )
    else:
        return f"the connection to the model server at {base_url} failed: {text}", ""
    return f"could not connect to the model server at {base_url} ({why})", HOW_TO_POINT


def _plain_problem(base_url: str, exc: OSError | ValueError) -> tuple[str, str]:
    """`connection_problem` of a request made without httpx, in the same words."""
    if isinstance(exc, ConnectionRefusedError):
        why = "connection refused"
    elif isinstance(exc, socket.gaierror):
        why = f"unknown host {urlsplit(base_url).hostname!r}"
    elif isinstance(exc, ClosedUnanswered | ConnectionResetError | BrokenPipeError):
        return (
            f"the model server at {base_url} closed the connection without answering "
            "(is it an OpenAI-compatible server, and is it still running?)",
            "",
        )
    else:
        text = str(exc) or type(exc).__name__
        return f"the connection to the model server at {base_url} failed: {text}", ""
    return f"could not connect to the model server at {base_url} ({why})", HOW_TO_POINT


@frozen
class DetectedServer:
    name: str
    base_url: str
    models: tuple[str, ...] = ()

    @property
    def model(self) -> str | None:
        """The model mm takes when the configuration names none."""
        return self.models[0] if self.models else None


def model_ids(data: Any) -> list[str] | None:
    """The ids of a `/models` answer, or None when it is not an OpenAI-style list (a web app on
    port 8080 is not a model server)."""
    if not isinstance(data, dict) or not isinstance(data.get("data"), list | None):
        return None
    out = []
    for item in data.get("data") or []:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            out.append(item["id"])
        elif isinstance(item, str):
            out.append(item)
    return out


async def detect_local_server(
    timeout: float = 2.0, presets: Sequence[Preset] | None = None
) -> DetectedServer | None:
    """Probe the local presets' `/models` concurrently; the first preset in table order that
    answers with a model list wins. Bounded by `timeout`, so start-up never waits long on a
    port that takes a connection and never answers.

    The timeout costs nothing where nothing listens (a closed local port refuses at once) or a
    server answers (in milliseconds): it is only how long a server gets to answer on a machine
    the model itself keeps busy. At 0.5 s, a llama.cpp server on a loaded two-core machine was
    missed and mm started on the demo model instead, silently."""
    candidates = [p for p in (PRESETS if presets is None else presets) if p.local]
    if not candidates:
        return None
    async with JsonAsker(timeout) as asker:

        async def probe(p: Preset) -> list[str] | None:
            try:
                return model_ids(await asker.json(p.base_url.rstrip("/") + "/models"))
            except Exception:  # noqa: BLE001 - whatever goes wrong, detection must not stop start-up
                return None

        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout + 0.25
        tasks = [asyncio.ensure_future(probe(p)) for p in candidates]
        try:
            # In table order: an earlier preset that is slow to answer still wins, but the wait
            # ends as soon as the outcome is decided, and never after one shared deadline.
            for p, task in zip(candidates, tasks, strict=True):
                try:
                    models = await asyncio.wait_for(task, max(0.0, deadline - loop.time()))
                except TimeoutError:
                    models = None
                if models is not None:
                    return DetectedServer(p.name, p.base_url.rstrip("/"), tuple(models))
            return None
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


class JsonAsker:
    """Asks servers for small JSON answers, for detection and the context-window lookup:
    `local_json` for plain http on this machine, an httpx client (made at the first other URL,
    with the shared TLS context, closed at the end) for the rest. `json` never raises for a
    failed request: not knowing is an ordinary outcome there."""

    def __init__(
        self, timeout: float, headers: dict[str, str] | None = None, *, trust_env: bool = False
    ) -> None:
        self.timeout = timeout
        self.headers = {"User-Agent": USER_AGENT, **(headers or {})}
        self.trust_env = trust_env
        self._client: Any = None

    async def __aenter__(self) -> JsonAsker:
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            await self._client.aclose()

    async def json(self, url: str, body: Any = None) -> Any:
        """The JSON of a 200 answer to GET `url` (POST `body` when given), else None."""
        answer = await self.exchange(url, body)
        return answer[1] if answer is not None and answer[0] == 200 else None

    async def exchange(self, url: str, body: Any = None) -> tuple[int, Any] | None:
        """The status and JSON (None when not JSON) of the answer to GET `url` (POST `body`
        when given), or None when no answer came: a refusal's own words are worth saying."""
        if plain_local(url):
            try:
                return await local_json(url, body=body, headers=self.headers, timeout=self.timeout)
            except (OSError, TimeoutError, ValueError):
                return None
        import httpx

        from mm_tui.engine.tls import tls_context

        try:
            if self._client is None:
                self._client = httpx.AsyncClient(
                    timeout=httpx.Timeout(self.timeout),
                    trust_env=self.trust_env,
                    headers=self.headers,
                    verify=tls_context(),
                )
            if body is None:
                r = await self._client.get(url)
            else:
                r = await self._client.post(url, json=body)
        except (httpx.HTTPError, httpx.InvalidURL, ValueError, OSError):
            return None
        try:
            return r.status_code, r.json()
        except ValueError:
            return None if r.status_code == 200 else (r.status_code, None)


async def list_models(base_url: str, api_key: str | None = None, timeout: float = 5.0) -> list[str]:
    """The model ids a server offers (GET {base_url}/models). Raises `ModelError`."""
    headers = {"User-Agent": USER_AGENT}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    base = base_url.rstrip("/")
    import httpx

    from mm_tui.engine.tls import tls_context

    async with httpx.AsyncClient(
        timeout=httpx.Timeout(timeout),
        trust_env=not is_loopback(base),
        headers=headers,
        verify=tls_context(),
    ) as client:
        try:
            r = await client.get(base + "/models")
        except httpx.RequestError as exc:
            raise ModelError(" ".join(connection_problem(base, exc)).strip()) from None
        if r.status_code != 200:
            raise ModelError(
                status_message(base, "", r.status_code, r.reason_phrase, r.content),
                status=r.status_code,
            )
        try:
            ids = model_ids(r.json())
        except ValueError:
            ids = None
        if ids is None:
            raise ModelError(f"{base}/models did not answer with a list of models")
        return ids
