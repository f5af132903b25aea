"""What `yaml.safe_load` makes of a file of flat `key: value` lines, without importing PyYAML.

A stand-in for `yaml.safe_load`, so that the window's first frame (mm's own themes) and the
engine being ready (the demo playground's skill, a config file of plain keys) do not wait for
PyYAML's import: see docs/performance.md. Most such files are flat lines, which this reads
exactly as PyYAML does; anything else (`None` here) goes to PyYAML. A line holds a key
that starts with a letter or `_`, then nothing, a quoted text without escapes, a whole number
written plainly (`0`, `20000`: no sign, no leading zero, no `_`), or a plain text that starts
with a letter and holds no `#`, tab or quote, nor a colon but one followed by neither a space nor
the line's end (a URL: `baseUrl: http://localhost:11434/v1`); a comment may follow after a
space. `true`
and `false` are booleans; the other words YAML 1.1 reads as booleans or null (`yes`, `no`,
`on`, `off`, `null`, and `y`, `n` to be safe) are left to PyYAML, as are keys that are such
words. A key given twice takes its last value, as in PyYAML, or (`unique`) leaves the file to
PyYAML, for a reader that refuses it there.
"""

from __future__ import annotations

import re

_LINE = re.compile(
    r"""([A-Za-z_][\w-]*):(?: +("[^"\\]*"|'[^']*'|0|[1-9][0-9]*|[A-Za-z](?:[^:#\t'"]|:(?=[^ \t]))*?))?(?: +#.*)? *"""
)
_BLANK = re.compile(r" *(?:#.*)?")
_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}


def read_flat_yaml(text: str, *, unique: bool = False) -> dict[str, str | bool | int | None] | None:
    """The mapping PyYAML would read from `text`, or None when `text` is not flat lines (or
    reads as no mapping at all: an empty file is YAML's None), or, when `unique`, gives a key
    twice."""
    if not text.replace("\n", "").replace("\r", "").isprintable():
        return None  # a tab, a control character, a byte-order mark, another line break
    data: dict[str, str | bool | int | None] = {}
    for line in text.splitlines():
        if _BLANK.fullmatch(line):
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            return None
        key, value = match.groups()
        if key.lower() in _WORDS or (unique and key in data):
            return None  # a key YAML reads as a word: PyYAML decides; a key twice: its reader
        if value is None:
            data[key] = None
        elif value[0] in "\"'":
            data[key] = value[1:-1]
        elif value[0] in "0123456789":
            data[key] = int(value)
        elif value in ("true", "false"):
            data[key] = value == "true"
        elif value.lower() in _WORDS:
            return None
        else:
            data[key] = value
    return data or None


def is_blank(text: str) -> bool:
    """Whether `text` is only blank lines and comments: YAML's None, read without PyYAML."""
    return text.replace("\n", "").replace("\r", "").isprintable() and all(
        _BLANK.fullmatch(line) for line in text.splitlines()
    )
