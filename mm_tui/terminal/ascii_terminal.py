"""A terminal that cannot take UTF-8 (`LC_ALL=C` with `PYTHONUTF8=0`, an old serial console):
mm's box drawing, marks and emoji go out as ASCII look-alikes instead of crashing line mode
(`UnicodeEncodeError` at the first `🛠️` line) or painting `\\u256d\\u2500` in the window.

Each character becomes as many ASCII characters as it takes cells (a mark one, an emoji two), so
the window's layout, which Textual computes in cells, stays where it was."""

from __future__ import annotations

import codecs
import sys
import unicodedata

ERRORS = "mm-ascii"

_GLYPHS = {
    **dict.fromkeys("─━┄┈═╌", "-"),
    **dict.fromkeys("│┃┆┊║▏▎▍▌▐", "|"),
    **dict.fromkeys("╭╮╰╯┌┐└┘├┤┬┴┼╔╗╚╝", "+"),
    **dict.fromkeys("‣›▸▶→", ">"),
    **dict.fromkeys("▾▼", "v"),
    **dict.fromkeys("•·∙", "*"),
    **dict.fromkeys("█▇▆▅▄▃▂▁", "#"),
    "✓": "v",
    "✔": "v",
    "✗": "x",
    "✘": "x",
    "⊘": "o",
    "…": ".",
    "—": "-",
    "–": "-",
    "←": "<",
    "⏎": "<",
    "⚙": "*",
    "🛠": "$>",
    "🔐": "?!",
    "📄": "[]",
    "📝": "[]",
    "📖": "[]",
    "🔎": "()",
    "🌐": "()",
    "🔌": "()",
    "🗣": ">>",
    "“": '"',
    "”": '"',
    "‘": "'",
    "’": "'",
}


def _replace(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    out = []
    for char in error.object[error.start : error.end]:
        if char in _GLYPHS:
            out.append(_GLYPHS[char])
        elif unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
            continue  # variation selectors, joiners: no cell of their own
        elif "\u2800" <= char <= "\u28ff":  # braille: the spinner
            out.append("*")
        else:
            wide = unicodedata.east_asian_width(char) in ("W", "F") or ord(char) > 0x1F000
            out.append("??" if wide else "?")
    return "".join(out), error.end


codecs.register_error(ERRORS, _replace)


def use_ascii_where_needed() -> bool:
    """Give stdout and stderr (Textual draws on stderr) the ASCII fallback when their encoding
    cannot carry mm's glyphs; True when it did."""
    changed = False
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        encoding = getattr(stream, "encoding", None) or "ascii"
        try:
            "╭─✓🛠".encode(encoding)
        except (UnicodeEncodeError, LookupError):
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(errors=ERRORS)
                changed = True
    return changed
