"""`mm --doctor`: the model probe run now (engine/model_probe.py), whatever was kept, its answer
kept for the next start, and each finding printed on a line of its own, plain text.

The server is found as at any start (the configured one, else the first local server that
answers); its window is asked as at start-up. The probe may take longer than at a first use
(`DOCTOR_BOUND`): a loaded machine or a big model should not make the doctor say "timed out".
Exit 0 when the server could be reached, 2 with one line on stderr saying why when not (no
server, the demo model, a server that does not answer). Every line goes through
`safe_display`: a reason can quote the server's words."""

from __future__ import annotations

import sys

from mm_tui.config import Settings
from mm_tui.core.terminal_text import safe_display

DOCTOR_BOUND = 60.0
"""Seconds the doctor's probe may take: the person asked for it and waits for it, where the
probe at a model's first use holds the first request for at most 10 s."""


async def run_doctor(settings: Settings, *, demo: bool = False) -> int:
    from mm_tui.engine.ask_style import probed
    from mm_tui.startup import StartupError, pick_model

    try:
        picked = await pick_model(settings, demo=demo)
    except StartupError as exc:
        return _fail(str(exc))
    client = picked.client
    if not callable(getattr(client, "ask_unstreamed", None)):
        return _fail(
            "mm --doctor: no model server to probe (the built-in demo model answers from a "
            "script) — start one, or pass --base-url http://host:port/v1 --model NAME"
        )
    try:
        if picked.answering is False:
            said = "; ".join(picked.notes) or f"{client.base_url} does not answer"
            return _fail(f"mm --doctor: {said}")
        window = await client.read_context_window()  # type: ignore[attr-defined]
        findings, _ = await probed(
            client, window, fresh=True, bound=DOCTOR_BOUND, request_bound=DOCTOR_BOUND / 2
        )
    finally:
        await client.aclose()
    if findings.status == "unreachable":
        return _fail(f"mm --doctor: {findings.reason}")
    print(safe_display(f"server: {client.base_url}"))
    print(safe_display(f"model: {client.model}"))
    for line in findings.lines():
        print(safe_display(line))
    return 0


def _fail(message: str) -> int:
    print(safe_display(message), file=sys.stderr)
    return 2
