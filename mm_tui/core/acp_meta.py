"""What mm adds to ACP messages, under `_meta["mm"]`, for a parent mm.

An editor needs nothing beyond the protocol. A parent mm (ask_agent, /ask, `mm --ask`) shows an
asked agent the way it shows itself: a header with the agent's title, model and provider, and
tool lines with the tool's name, status and elapsed time. The protocol carries none of those
exactly, so the agent side puts them in `_meta` and the client side reads them when present
(falling back to what the protocol gives, so any ACP agent can still be asked).

The agreement, one place for both sides:

- `InitializeResponse._meta["mm"]` and `NewSessionResponse._meta["mm"]`:
  `{"title": acp.title, "model": model name, "provider": provider name}`.
- the `tool_call` update that starts a call, `_meta["mm"]`: `{"tool": tool name}` (the ACP title
  is the engine's title, `bash  <command>`), and `"from_text": true` for a call the model wrote
  in its answer's text (`ToolCallStarted.from_text`).
- the `tool_call_update` that ends a call, `_meta["mm"]`:
  `{"status": "ok" | "error" | "rejected" | "cancelled", "elapsed": seconds}`.
- a `usage_update`, `_meta["mm"]`: `{"fixed": tokens}`, the part of `used` that every request
  carries (the system prompt and the tool declarations), when the window is known.
"""

from __future__ import annotations

from typing import Any, Literal

from mm_tui.core.events import Decision

KEY = "mm"

# The four decisions as ACP's permission option kinds, one to one; both sides use this table.
# The agent's option ids are the Decision letters themselves.
OPTION_KINDS: dict[
    Decision, Literal["allow_once", "allow_always", "reject_once", "reject_always"]
] = {
    Decision.ALLOW_ONCE: "allow_once",
    Decision.ALLOW_SESSION: "allow_always",
    Decision.REJECT: "reject_once",
    Decision.NEVER: "reject_always",
}


def put(**values: Any) -> dict[str, Any]:
    """The `_meta` value carrying `values` for a parent mm."""
    return {KEY: values}


def get(meta: dict[str, Any] | None) -> dict[str, Any]:
    """The mm part of a `_meta` value, empty when the other side is not mm."""
    if not isinstance(meta, dict):
        return {}
    part = meta.get(KEY)
    return part if isinstance(part, dict) else {}
