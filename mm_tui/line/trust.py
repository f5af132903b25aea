"""Line mode's question about a project config that needs the person's trust
(config/project.py's NEEDS_TRUST), asked on the terminal before anything starts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mm_tui.core.trust import visible

if TYPE_CHECKING:
    from mm_tui.config import ProjectConfig


TRUST_PROMPT = "trust it?  [t] trust (remember)  [o] this time only  [i] ignore those keys: "


def trust_question(project: ProjectConfig) -> list[str]:
    """What the person is shown about a project config that needs trust: its path, and the keys
    only they can allow, each with its value, control characters made visible."""
    return [
        f"mm: {visible(str(project.path))} sets what only you can allow:",
        *(f"  {line}" for line in project.shown()),
    ]


def ask_trust(project: ProjectConfig) -> str:
    """Line mode's question about a project config that needs trust, asked on the terminal
    before anything starts: one of TRUST_ANSWERS, read as a line (`t`, `o`, `i`, or the whole
    word). The end of input, or Ctrl+C, is "ignore": nothing is allowed without an answer."""
    answers = {"t": "trust", "o": "once", "i": "ignore"}
    print("\n".join(trust_question(project)), flush=True)
    while True:
        try:
            line = input(TRUST_PROMPT).strip().lower()
        except (EOFError, KeyboardInterrupt):
            print(flush=True)
            return "ignore"
        answer = answers.get(line[:1]) if line in (*answers, *answers.values()) else None
        if answer is not None:
            return answer
