"""`python -m support.scripted_server "Hello there"` (with tests/ on the path): a server that
answers every request with that text, its base URL printed first."""

from __future__ import annotations

import sys
import threading

from .script import Reply
from .server import ScriptedServer

if __name__ == "__main__":
    text = " ".join(sys.argv[1:]) or "ok"
    with ScriptedServer(on_empty=lambda req: Reply(text)) as srv:
        print(srv.base_url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
