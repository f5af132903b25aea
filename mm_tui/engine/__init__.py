"""The engine: the turn, the model client, sessions, the context window, guards.

httpx imports its command-line client (`httpx._main`: click, pygments, rich.progress and
rich.syntax) whenever click is installed, and mcp installs it: 20 ms of start-up on an idle
two-core machine, over 70 ms on a busy one, for a program mm never runs. A None in sys.modules
makes that import fail, and httpx then defines a stub `httpx.main` instead (its own fallback for
a missing `httpx[cli]`). Done here, before any engine module imports httpx."""

import sys

sys.modules.setdefault("httpx._main", None)  # type: ignore[assignment] - None blocks the import
