"""The quoted errors of a call to an asked agent: the model reads them as the tool's result and
the person sees them in the transcript, so every fault is said the same way wherever it is found.
"""

from __future__ import annotations


def failed(name: str, reason: str) -> str:
    return f"[ask_agent: {name} failed: {reason}]"


def stopped(name: str, reason: str) -> str:
    return f"[ask_agent: {name} stopped before finishing: {reason}]"


def no_answer(name: str) -> str:
    return f"[ask_agent: {name} gave no answer]"


def stop_error(name: str, reason: str) -> str | None:
    if reason == "end_turn":
        return None
    why = {
        "cancelled": "cancelled",
        "max_turn_requests": "it reached its maxTurns",
        "max_tokens": "its model reached its token limit",
        "refusal": "its model refused",
    }.get(reason, reason)
    return stopped(name, why)


def request_error(exc: Exception) -> str:
    message = getattr(exc, "message", None) or str(exc)
    data = getattr(exc, "data", None)
    if isinstance(data, dict) and isinstance(data.get("details"), str):
        message = f"{message}: {data['details']}"
    return message
