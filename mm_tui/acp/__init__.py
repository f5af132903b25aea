"""`mm -acp`: mm as an ACP agent over stdio, for editors (Zed...) and for a parent mm.

One `Engine` per ACP session, built for the session's `cwd` (its tools work there, its session
file goes to `sessionsDir` resolved against it); the model client is picked once, at the first
request that needs it, and shared by every session. A prompt runs one engine turn; the engine's
events become `session/update` notifications and `session/request_permission` requests (the
table is in `translate.py`).

What a parent mm needs beyond the protocol travels in `_meta["mm"]` (see `core/acp_meta.py`).

The rest of mm imports from here: the package's modules are its own business.
"""

from mm_tui.acp.content import diff_contents, prompt_text
from mm_tui.acp.mm_agent import STOP_REASONS, MMAgent
from mm_tui.acp.stdio import StdioError, configure_logging, protocol_streams, run, serve
from mm_tui.acp.translate import PERMISSION_OPTIONS

__all__ = [
    "PERMISSION_OPTIONS",
    "STOP_REASONS",
    "MMAgent",
    "StdioError",
    "configure_logging",
    "diff_contents",
    "prompt_text",
    "protocol_streams",
    "run",
    "serve",
]
