"""Keys in xterm's modifyOtherKeys form (`ESC [ 27 ; modifiers ; code ~`), which xterm sends with
`modifyOtherKeys: 2`, and tmux with `extended-keys` on in its default format, for Shift+Enter,
Ctrl+Enter, Alt+Enter, Ctrl+Backspace and the like.

Textual's parser reads that form as a kitty sequence whose text is the character itself, so
Shift+Enter arrives named `shift+\\r`, which nothing binds: the new line was swallowed. Here such a
key gets the name Textual gives the same key in the kitty form (`ESC [ 13 ; 2 u`: `shift+enter`),
before any binding is looked up. Printable keys in that form already arrive as their character and
are left alone."""

from __future__ import annotations

from textual import events

# the control characters that form carries, by the name Textual gives the key otherwise
_NAMES = {"\r": "enter", "\n": "enter", "\x7f": "backspace", "\x08": "backspace", "\x1b": "escape"}


def named_key(event: events.Key) -> events.Key:
    """`event` under its usual name, or `event` itself when its name is already one."""
    *modifiers, last = event.key.split("+")
    name = _NAMES.get(last)
    if name is None:
        return event
    if not modifiers and name == "enter":
        # a bare Enter arrives as `\r` and is named `enter` by Textual: `\r` as a name comes only
        # from this form, whose Alt modifier Textual drops when the text is a character
        modifiers = ["alt"]
    if modifiers:
        return events.Key("+".join([*modifiers, name]), None)
    return events.Key(name, event.character)
