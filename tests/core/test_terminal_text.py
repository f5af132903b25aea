"""core/terminal_text.py: nothing a terminal acts on, or that hides or reorders text, survives
`safe_display`; everything else is left as it was."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mm_tui.core.terminal_text import safe_display, visible_form

C0 = {chr(c) for c in range(0x20)} - {"\n", "\t"}
C1 = {chr(c) for c in range(0x80, 0xA0)}
BIDI = {chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x61C]}
INVISIBLE = {"\u200b", "\u2060", "\ufeff", "\u2028", "\u2029", "\U000e0041"}
DANGEROUS = C0 | C1 | BIDI | INVISIBLE | {"\x7f"}
# Every character that is not printable and not a plain space, newline or tab (`exact`)
# except the private-use, surrogate and unassigned ones, which a terminal draws as a box.
HIDDEN_CATEGORIES = {"Cc", "Cf", "Zs", "Zl", "Zp"}


def dangerous_in(text: str) -> set[str]:
    return {char for char in text if char in DANGEROUS}


@given(st.text())
def test_no_dangerous_character_survives(text: str) -> None:
    shown = safe_display(text)
    assert not dangerous_in(shown)
    assert "\r" not in shown


@given(st.text())
def test_exact_leaves_only_printable_text_newlines_tabs_and_spaces(text: str) -> None:
    shown = safe_display(text, exact=True)
    hidden = {
        char
        for char in shown
        if unicodedata.category(char) in HIDDEN_CATEGORIES and char not in " \n\t"
    }
    assert not hidden, [hex(ord(char)) for char in hidden]


@given(st.text())
def test_the_result_is_stable(text: str) -> None:
    once = safe_display(text)
    assert safe_display(once) == once
    exact = safe_display(text, exact=True)
    assert safe_display(exact, exact=True) == exact


@given(st.text(alphabet=st.characters(exclude_categories=["Cc", "Cf", "Zl", "Zp", "Cs"])))
def test_printable_text_newlines_and_tabs_are_unchanged(text: str) -> None:
    text = "\t" + text + "\n"
    assert safe_display(text) == text
    assert safe_display(text) is text  # nothing to do: not even a copy


def test_every_escape_shows_as_python_writes_it() -> None:
    assert safe_display("\x1b]52;c;aGVsbG8=\x07") == "\\x1b]52;c;aGVsbG8=\\x07"
    assert safe_display("\x1b]0;owned\x07") == "\\x1b]0;owned\\x07"
    assert safe_display("\x1bP+q544e\x1b\\") == "\\x1bP+q544e\\x1b\\"
    assert safe_display("\x9b2J\x9d0;t\x9c\x90q") == "\\x9b2J\\x9d0;t\\x9c\\x90q"
    assert safe_display("a\x7fb\x00") == "a\\x7fb\\x00"
    assert safe_display("if x:\u202e } \u2066") == "if x:\\u202e } \\u2066"
    assert safe_display("hidden\U000e0041") == "hidden\\U000e0041"
    for char in DANGEROUS:
        assert safe_display(char) == repr(char)[1:-1] == visible_form(char)


def test_the_spoofed_command_reads_as_what_runs() -> None:
    command = "rm -f important.txt; echo gone #\x1b[2K\x1b[1G\x1b[1A\x1b[2Kls -la"
    shown = safe_display(command, exact=True)
    assert shown == "rm -f important.txt; echo gone #\\x1b[2K\\x1b[1G\\x1b[1A\\x1b[2Kls -la"


@pytest.mark.parametrize(
    ("text", "shown", "exact"),
    [
        ("a\r\nb", "a\nb", "a\\r\nb"),  # a line end; exactly, the CR bash would see
        ("a\rb", "a\\rb", "a\\rb"),  # a lone CR would overwrite the line's start
        ("a\r", "a\\r", "a\\r"),
        ("x\u00a0y\u200dz\u00ad", "x\u00a0y\u200dz\u00ad", "x\\xa0y\\u200dz\\xad"),
        ("👨\u200d👩", "👨\u200d👩", "👨\\u200d👩"),  # an emoji family in prose keeps its joiner
    ],
)
def test_carriage_returns_joiners_and_spaces(text: str, shown: str, exact: str) -> None:
    assert safe_display(text) == shown
    assert safe_display(text, exact=True) == exact


def test_exact_escapes_every_control_format_and_space_character() -> None:
    """All of Unicode's categories Cc, Cf, Zs, Zl, Zp (as this Python knows them), the plain
    space, newline and tab aside; and without `exact` every one of them that hides or reorders
    text, the joiners, the soft hyphen, the spaces and the scripts' own format marks aside."""
    kept_in_prose = {"\u200c", "\u200d", "\u00ad"}
    for code in range(0x110000):
        char = chr(code)
        category = unicodedata.category(char)
        if category not in HIDDEN_CATEGORIES or char in " \n\t":
            continue
        assert safe_display(char, exact=True) == visible_form(char), hex(code)
        if category in {"Cc", "Zl", "Zp"} or char in BIDI or char in INVISIBLE:
            assert safe_display(char) == visible_form(char), hex(code)
        if char in kept_in_prose or category == "Zs":
            assert safe_display(char) == char, hex(code)


def test_every_character_escaped_is_one_isprintable_refuses() -> None:
    """`safe_display` returns printable text without a scan: that holds only while neither class
    holds a character `str.isprintable` accepts (as this Python's Unicode knows them)."""
    import re

    from mm_tui.core import terminal_text

    everything = "".join(chr(code) for code in range(0x110000))
    for exact, pattern in terminal_text._CLASSES.items():
        escaped = re.findall(pattern, everything)
        assert len(escaped) > 150, exact  # the class is read, not empty
        assert not [hex(ord(c)) for c in escaped if c.isprintable()], exact
