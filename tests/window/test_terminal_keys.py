"""Keys in xterm's modifyOtherKeys form, read by Textual's own parser as a terminal's bytes are,
get the names the kitty form of the same keys gets; other keys keep theirs."""

from __future__ import annotations

import pytest
from textual._xterm_parser import XTermParser

from mm_tui.window.terminal_keys import named_key


def keys(sequence: str) -> list[str]:
    return [named_key(event).key for event in XTermParser().feed(sequence)]


@pytest.mark.parametrize(
    ("sequence", "key"),
    [
        ("\x1b[27;2;13~", "shift+enter"),
        ("\x1b[27;3;13~", "alt+enter"),
        ("\x1b[27;5;13~", "ctrl+enter"),
        ("\x1b[27;5;127~", "ctrl+backspace"),
        ("\x1b[27;5;27~", "ctrl+escape"),
        ("\x1b[27;2;127~", "backspace"),
    ],
)
def test_modify_other_keys_named_as_in_the_kitty_form(sequence: str, key: str) -> None:
    assert keys(sequence) == [key]


@pytest.mark.parametrize(
    ("sequence", "key"),
    [
        ("\r", "enter"),
        ("\x7f", "backspace"),
        ("a", "a"),
        ("\x1b[13;2u", "shift+enter"),
        ("+", "plus"),
    ],
)
def test_other_keys_keep_their_names(sequence: str, key: str) -> None:
    assert keys(sequence) == [key]
