"""Text from a model, a tool, a page or a file made safe to put on a terminal: `safe_display`.

A terminal acts on what it is sent. An escape sequence in a command's output or in a model's
answer can write the person's clipboard (OSC 52), set the window's title, print a link that
points elsewhere (OSC 8), query the terminal (DCS), or move the cursor and erase lines: enough
to make a permission question show `ls -la` while it asks to run `rm -f important.txt`. Rich
drops only BEL, backspace, CR, VT and FF; ESC, the other C0 controls, DEL and the 8-bit C1
controls (U+009B is a CSI on its own) reach the terminal as they are.

So every character a terminal or a reader could take for something else is written the way
Python's `repr` writes it, in ASCII, where it stands: ESC is `\\x1b`, U+009B `\\x9b`, DEL
`\\x7f`, a carriage return `\\r`, a right-to-left override `\\u202e`. One form for all, readable
as what a person would type in a shell (`$'\\x1b'`), one cell per character, so nothing hides.
Newline and tab stay. What is escaped:

- every C0 control but newline and tab, DEL, every C1 control (U+0080-U+009F);
- a carriage return that does not end a line (`\\r\\n` becomes a plain line end, as Rich
  shows it today): a lone CR returns the cursor, and what follows overwrites the start of the line;
  shown as `\\r` rather than as a new line because bash takes it as an ordinary character,
  not as the end of a command;
- the bidirectional controls (U+202A-U+202E, U+2066-U+2069, the marks U+200E, U+200F, U+061C),
  which reorder what is shown so that a command reads differently from what runs ("Trojan
  Source"); the line and paragraph separators U+2028, U+2029, which some terminals break lines
  at; and the invisible characters that have no use in text a person reads: zero-width space
  U+200B, word joiner and invisible operators U+2060-U+2064, the deprecated format characters
  U+206A-U+206F, the byte order mark U+FEFF, U+180E, the interlinear annotations U+FFF9-U+FFFB
  and the tag characters U+E0000-U+E007F (text hidden from the reader).

`exact=True` is for what a person must read exactly, a command, a path, a permission question:
it also escapes the joiners U+200C and U+200D (which emoji and some scripts need in prose, so
not in an answer), the soft hyphen U+00AD, every space but the ASCII one (a no-break space looks
like a word break that bash does not make), the format characters of particular scripts (every
character of Unicode's categories Cc, Cf, Zs, Zl and Zp but the plain space is then escaped),
and every `\\r`, before a newline too.

The text is changed only where it is shown: the model, the journal and the session file keep
the real text. `safe_display` is one scan of a regular expression (about 9 ms for a megabyte of
output, clean or not, and half a microsecond for a streamed delta, on the machine it was
written on), after `str.isprintable`, which passes most single lines without it; text with
nothing to escape comes back as it is, not copied. The `exact` form's
larger class scans about three times slower: it is meant for titles, commands and paths.
"""

from __future__ import annotations

import re

# Ranges, as regular-expression class items, of what is always escaped.
_ALWAYS = (
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"  # C0 but \t \n \r, DEL, C1
    "\u061c\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f"
    "\ufeff\ufff9-\ufffb\U000e0000-\U000e007f"
)
# What `exact` adds: joiners, soft hyphen, every space but U+0020, and the format characters
# of particular scripts (Arabic, Syriac, Egyptian, shorthand, music): with the above, every
# character of the categories Cc, Cf, Zs, Zl and Zp.
_EXACT = (
    "\u00a0\u00ad\u1680\u2000-\u200a\u200c\u200d\u202f\u205f\u3000"
    "\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
)

# One class each: scanned ~4x faster than an alternation. Compiled at their first use (half a
# millisecond each, on the way to the first frame otherwise), which text with nothing to
# escape never reaches (`safe_display`).
_PATTERNS: dict[bool, re.Pattern[str]] = {}
_CLASSES = {False: f"[{_ALWAYS}\r]", True: f"[{_ALWAYS}{_EXACT}\r]"}


def visible_form(char: str) -> str:
    """How one escaped character shows: as Python's `repr` writes it, without the quotes."""
    if char == "\r":
        return "\\r"
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


_FORMS: dict[str, str] = {}  # each escaped character's form, made once


def _exact_form(match: re.Match[str]) -> str:
    char = match.group()
    form = _FORMS.get(char)
    if form is None:
        form = _FORMS[char] = visible_form(char)
    return form


def _form(match: re.Match[str]) -> str:
    if match.group() == "\r" and match.string.startswith("\n", match.end()):
        return ""  # the CR of a CRLF: a line end
    return _exact_form(match)


def safe_display(text: str, *, exact: bool = False) -> str:
    """`text` with every character a terminal may act on, or that hides or reorders what a
    reader sees, in its visible form (`\\x1b`, `\\x9b`, `\\r`, `\\u202e`); newlines and tabs
    kept. A `\\r\\n` stays a line end unless `exact` (see the module's docstring for what
    `exact` adds). Text without any such character is returned as it is."""
    # Every character either class escapes is one `isprintable` refuses (categories Cc, Cf, Zs
    # but the space, Zl, Zp; a tag or an unassigned one): such text holds none of them.
    if text.isprintable():
        return text
    pattern = _PATTERNS.get(exact)
    if pattern is None:
        pattern = _PATTERNS[exact] = re.compile(_CLASSES[exact])
    if pattern.search(text) is None:
        return text
    return pattern.sub(_exact_form if exact else _form, text)
