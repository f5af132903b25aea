"""A home of the bench's own: what every bench calls first, so that `make bench` measures mm as
it starts for anybody, and leaves nothing in the home of the person who runs it.

Without it the benches ran mm with that person's home: their `~/.config/mm/config.yaml` (a
theme, MCP servers, a model) changed what was measured, and every run left folders in their
state folder (`~/.local/state/mm`: the undo store of each bench session, the findings of each
model probe) that nothing removes.

So HOME, and XDG_CONFIG_HOME, XDG_STATE_HOME and XDG_DATA_HOME with it, become a temporary
folder, removed when the bench exits, and XDG_CACHE_HOME too (the language servers of bench_lsp
keep theirs there); the children it starts inherit it. What the benches download once (the
fetch corpus, the peer agents) stays in the person's cache, `~/.cache/mm-bench` (`bench_cache`,
which MM_BENCH_CACHE names from then on). mm's own variables go (MM_*, OPENAI_*: a person's
model, key or yolo), but the benches' switches (MM_BENCH_*, and MM_CORPUS, where
bench_fetch_corpus finds its pages) stay. Proxies stay: the downloads may need them.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

KEPT = ("MM_BENCH", "MM_CORPUS")  # the benches' own switches, not mm's settings


def bench_cache() -> Path:
    """Where the benches keep what they download once: the person's, also in a private home."""
    given = os.environ.get("MM_BENCH_CACHE")
    if given:
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mm-bench"


def private_home() -> Path:
    """Point this process, and all it starts from now on, at a fresh home; returns it."""
    cache = bench_cache()
    for name in list(os.environ):
        if name.startswith(("MM_", "OPENAI_")) and not name.startswith(KEPT):
            del os.environ[name]
    home = Path(tempfile.mkdtemp(prefix="mm-bench-home-"))
    atexit.register(shutil.rmtree, home, True)
    os.environ.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        MM_BENCH_CACHE=str(cache),
    )
    return home
