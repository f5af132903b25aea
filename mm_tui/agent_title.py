"""The line that names an agent, `mm [title] · model @ provider`, in every front end: the
window's header and an asked agent's header, line mode's banner. Rich only, so that line mode
loads no Textual for it."""

from __future__ import annotations

from rich.text import Text


def header_text(title: str, model: str, provider: str, asked_by: str | None = None) -> Text:
    text = Text.assemble((f"mm [{title}]", "bold"), f" · {model} @ {provider}")
    if asked_by:
        text.append(f" · asked by {asked_by}")
    return text
