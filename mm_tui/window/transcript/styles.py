"""What each part of a transcript item is drawn in: (theme variable for the colour, text style).

Styles come from the theme directly (see window/theme_style.py) rather than from component
classes, for the first frame's sake (docs/performance.md).
"""

from __future__ import annotations

STYLES: dict[str, tuple[str | None, str]] = {
    "tool--bullet": ("accent", ""),
    "tool--title": ("text", ""),
    "tool--ok": ("success", ""),
    "tool--error": ("error", ""),
    "tool--rejected": ("warning", ""),
    "tool--cancelled": ("warning", ""),
    "tool--running": ("accent", ""),
    "tool--waiting": ("warning", "bold"),
    "tool--time": ("text-muted", ""),
    "tool--output": ("text-muted", ""),
    "tool--output-error": ("error", ""),
    "tool--selected": (None, "reverse"),
    "diff--added": ("success", ""),
    "diff--removed": ("error", ""),
    "diff--hunk": ("accent", ""),
    "diff--header": ("text-muted", "bold"),
    "user--prompt": ("accent", "bold"),
    "user--text": ("text", "bold"),
    "answer--text": ("text", ""),
    "answer--label": ("secondary", "bold"),
    "thought--text": ("text-muted", "italic"),
    "recap--rule": ("panel-lighten-2", ""),
    "recap--text": ("text-muted", ""),
    "notice--error": ("error", "bold"),
    "notice--warning": ("warning", ""),
    "notice--info": ("text-muted", ""),
    "child--header": ("secondary", "bold"),
}
# In a light theme, the colours of STYLES that would vanish into the background: the panel's
# lighter shade is near white there. `text-disabled` is the contrasting text at 38% in every
# theme, so it shows on any background and stays dimmer than the recap's muted text.
LIGHT_STYLES: dict[str, str] = {"recap--rule": "text-disabled"}
