"""How the requests to a model are made, as its probe found (engine/model_probe.py): streamed
or not when they carry tools, tools declared or described in the system prompt, or chat only.

Start-up turns it on for a model server (never for the demo model) and starts the probe at once,
in the background, so that start-up is not slowed; the first request of a model waits for it
(bounded: the probe gives up after PROBE_BOUND seconds, and mm then asks as it always does). A
model met later (`/model`) is probed at its first request. A kept answer (engine/probe_cache.py)
that still holds costs one `GET /models` and no probe request. When the answer changes how mm
asks, one line says so, once per model (`ModelProbed`).

One process probes a model once at a time: engines that begin the probe of a server's model
while it is under way (ACP sessions opened at once) wait for the same probe (`shared_probe`),
rather than doubling the requests to a server that may be slow. It is shared within one event
loop, none cancels it for the others, and it is dropped when done: later starts read the kept
answer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mm_tui.core.events import ModelProbed
from mm_tui.engine.model_stream import ModelClient
from mm_tui.engine.turn_state import Emit

if TYPE_CHECKING:  # loaded when the probe runs, not with the engine on the way to ready
    from mm_tui.engine.probe_findings import ProbeFindings
    from mm_tui.engine.text_call_prompt import TextCallHistory

PROBE_BOUND = 10.0  # seconds: the whole probe, at most (probe_findings.PROBE_BOUND)

UNSTREAMED_KINDS = ("tools", "auto", "none")
"""The provider's kinds of request that carry tools (engine/provider.py, `_kind`)."""
FINGERPRINT_SHARE = 0.3  # of the bound: the most the `GET /models` of the fingerprint may take


async def probed(
    client: Any,
    window: Any = None,
    *,
    state_dir: Path | None = None,
    bound: float = PROBE_BOUND,
    request_bound: float | None = None,
    fresh: bool = False,
) -> tuple[ProbeFindings, bool]:
    """The findings for `client`'s model, and whether they are the kept ones: those kept when
    they still hold (unless `fresh`), else a probe's, kept when it finished. `bound` holds
    for the whole, the fingerprint's `GET /models` included. Never raises."""
    # here, not at the top: the engine holds an AskStyle from start-up on, the probe runs later
    from mm_tui.core.paths import user_state_dir
    from mm_tui.engine.model_probe import REQUEST_BOUND, ModelProbe
    from mm_tui.engine.probe_cache import load_findings, read_fingerprint, save_findings

    state = state_dir if state_dir is not None else user_state_dir()
    base_url, model = client.base_url, client.model
    api_key = getattr(client, "api_key", None)
    started = asyncio.get_running_loop().time()
    try:
        async with asyncio.timeout(bound * FINGERPRINT_SHARE):
            fingerprint = await read_fingerprint(base_url, model, api_key=api_key)
    except TimeoutError:
        fingerprint = None
    kept = None if fresh else load_findings(state, base_url, model, fingerprint)
    if kept is not None:
        return kept, True
    wire = getattr(client, "wire_model", model)
    left = max(0.5, bound - (asyncio.get_running_loop().time() - started))
    each = request_bound if request_bound is not None else REQUEST_BOUND
    probe = ModelProbe(base_url, wire, api_key=api_key, bound=left, request_bound=each)
    findings = await probe.run(window)
    await asyncio.to_thread(save_findings, state, base_url, model, fingerprint, findings)
    return findings, False


ProbeKey = tuple[asyncio.AbstractEventLoop, str, str]
_probing: dict[ProbeKey, asyncio.Task[tuple[ProbeFindings, bool]]] = {}
"""The probes under way, by loop, server and model."""


def shared_probe(
    client: ModelClient, window: Any, *, state_dir: Path | None, bound: float
) -> asyncio.Task[tuple[ProbeFindings, bool]]:
    """The probe of `client`'s model (`probed`): the one under way in this loop, else a new
    one. Its waiters shield it: a waiter cancelled leaves it running for the others."""
    loop = asyncio.get_running_loop()
    key = (loop, client.base_url.rstrip("/"), client.model)
    task = _probing.get(key)
    if task is None:
        task = loop.create_task(probed(client, window, state_dir=state_dir, bound=bound))
        _probing[key] = task
        task.add_done_callback(
            lambda done: _probing.pop(key) if _probing.get(key) is done else None
        )
    return task


class AskStyle:
    """The findings of the model in use, and the requests made after them."""

    def __init__(self, bound: float = PROBE_BOUND, state_dir: Path | None = None) -> None:
        self.enabled = False  # start-up turns it on (`start`); an engine made bare asks as is
        self.bound = bound
        self.state_dir = state_dir
        self.findings: ProbeFindings | None = None
        self.window: Callable[[], Any] = lambda: None
        self._key: tuple[str, str] | None = None
        self._task: asyncio.Future[tuple[ProbeFindings, bool]] | None = None
        self._said: set[tuple[str, str]] = set()
        self._history: TextCallHistory | None = None  # made when first needed
        # the system message's text as chat only sends it (the engine's: fixed_prompt.py)
        self.without_tools: Callable[[str], str] = lambda text: text

    def start(self, client: ModelClient, window: Callable[[], Any]) -> None:
        """Probe `client`'s model from now on, in the background; `window` gives the window
        the engine learned (the probe does not ask the server for it again). It begins at the
        loop's next turn: start-up returns first, and the window is ready before the probe's
        requests and its HTTP client's import take their share of the process (a request sent
        meanwhile begins it itself, in `settle`)."""
        self.enabled, self.window = True, window
        asyncio.get_running_loop().call_soon(self.begin, client)

    def begin(self, client: ModelClient) -> None:
        """Start the probe of `client`'s model, unless it is the one probed already."""
        if not self.enabled or not callable(getattr(client, "ask_unstreamed", None)):
            return
        key = (client.base_url, client.model)
        if key == self._key:
            return
        self._key, self.findings = key, None
        self._task = shared_probe(client, self.window(), state_dir=self.state_dir, bound=self.bound)

    async def settle(self, client: ModelClient, emit: Emit) -> None:
        """Before a request: the probe of its model done (waited for, within its bound), its
        findings applied to `client`, and the line that says what changed, once a model."""
        self.begin(client)
        task, self._task = self._task, None
        if task is not None:
            try:  # the probe bounds itself; this bounds the wait if something hangs beneath
                async with asyncio.timeout(self.bound * 2 + 5):
                    self.findings = (await asyncio.shield(task))[0]
            except Exception:  # noqa: BLE001 - a probe that failed changes nothing
                self.findings = None
            if self.findings is not None and self.findings.status == "unreachable":
                self._key = None  # asked again at the next request: the server may be up then
        findings = self.findings
        if findings is None or not self.enabled or self._key is None:
            return
        if findings.unstreamed_tools:
            client.ask_unstreamed(UNSTREAMED_KINDS)  # type: ignore[attr-defined]
        line = findings.change()
        if line and self._key not in self._said:
            self._said.add(self._key)
            emit(ModelProbed(text=line))

    @property
    def asking(self) -> str:
        return self.findings.asking if self.findings is not None else "tools"

    def declared(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tools the model may call: none when it is spoken to in chat only."""
        return [] if self.asking == "chat only" else tools

    def request(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The history and the tools as the request sends them: with calls described as text
        (engine/text_call_prompt.py), the tools go in the system prompt, not in `tools`; in
        chat only, none go, the system prompt says nothing of them (`without_tools`), and the
        history's calls (a resumed session's) go as text."""
        if self.asking == "tools":
            return messages, tools
        if self._history is None:
            from mm_tui.engine.text_call_prompt import TextCallHistory

            self._history = TextCallHistory()
        if self.asking == "chat only":
            return self._history.messages(messages, [], self.without_tools), []
        return self._history.messages(messages, tools), []
