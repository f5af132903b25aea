"""The one environment of what the tests run: the developer's own mm configuration, keys and
terminal left out, a home folder of the test's own.

What is left out, and why (`leaks`):

- `MM_*`: mm's settings (MM_MODEL, MM_BASE_URL, MM_API_KEY, MM_YOLO, MM_SESSIONS_DIR...) and
  the depth of asked agents (MM_ASK_DEPTH). The developer's would change what the program under
  test does, and send their key to the scripted server and into session files. The switches of
  the test harness (MM_REQUIRE_LSP, MM_E2E_PYTHON...) mean nothing to mm itself.
- `OPENAI_*`: OPENAI_API_KEY is mm's fallback key (one copy of this helper kept it); the others
  (OPENAI_BASE_URL, OPENAI_ORG_ID...) are the same person's account, which a tool's command
  would see and print.
- proxies (`*_proxy`, any case): every server of the tests is on 127.0.0.1.
- COLUMNS, LINES: the size of the developer's terminal; what runs here has its own terminal or
  none, and Rich would take these over it.

HOME is the test's folder (no ~/.config/mm/config.yaml of the developer's), XDG_STATE_HOME
a folder in it (the logs of asked agents, line mode's history), and XDG_CONFIG_HOME too (no
~/.config/mm/AGENTS.md of the developer's, wherever their XDG_CONFIG_HOME points); the rest (PATH, LANG, the
virtual environment's variables) is kept: the program needs it to run as it runs for a person.
TMPDIR among it: during the tests it is the run's own temp folder (temp_folder.py), so what a
child makes there, the demo's playground above all, never lands in the machine's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

LEFT_OUT_PREFIXES = ("MM_", "OPENAI_")
LEFT_OUT_NAMES = ("COLUMNS", "LINES")


def leaks(name: str) -> bool:
    """Whether a variable of the developer's environment must not reach what a test runs."""
    return (
        name.startswith(LEFT_OUT_PREFIXES)
        or name.lower().endswith("_proxy")
        or name in LEFT_OUT_NAMES
    )


def home_variables(home: Path) -> dict[str, str]:
    return {
        "HOME": str(home),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CONFIG_HOME": str(home / ".config"),
    }


def clean_env(home: Path, extra: Mapping[str, str] | None = None, **more: str) -> dict[str, str]:
    """The environment of a subprocess (the real `mm`, a writer script, a shell in tmux): this
    process's without the variables that leak, HOME in `home`, then `extra` and `more` (a test's
    own MM_API_KEY, LC_ALL...)."""
    env = {k: v for k, v in os.environ.items() if not leaks(k)}
    env.update(home_variables(home))
    env.update(extra or {})
    env.update(more)
    return env


def isolate(monkeypatch: Any, home: Path) -> Path:
    """The same for this process, for the tests whose code under test starts `mm` itself (ask_agent
    and /ask start `mm -acp` with this process's environment): the variables that leak are
    removed and HOME is `home` until the test ends. Returns `home`, created."""
    for name in list(os.environ):
        if leaks(name):
            monkeypatch.delenv(name, raising=False)
    home.mkdir(parents=True, exist_ok=True)
    for name, value in home_variables(home).items():
        monkeypatch.setenv(name, value)
    return home
