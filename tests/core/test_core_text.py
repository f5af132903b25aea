"""core/text.py: cutting a text with an ellipsis, and the names of agents."""

from __future__ import annotations

import pytest

from mm_tui.core.text import (
    agent_header,
    agent_name,
    agent_title,
    ellipsize,
    one_line,
    strip_agent,
)


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("", 5, ""),
        ("short", 5, "short"),  # at the limit: whole
        ("longer", 5, "long…"),
        ("a", 1, "a"),
        ("ab", 1, "…"),
        ("x" * 200, 80, "x" * 79 + "…"),
    ],
)
def test_ellipsize(text: str, limit: int, expected: str) -> None:
    assert ellipsize(text, limit) == expected
    assert len(ellipsize(text, limit)) <= limit


def test_ellipsize_counts_characters_not_cells() -> None:
    """A wide character (two terminal cells) or an emoji counts as one: the limits are of
    characters, for titles and messages, not of screen width."""
    assert ellipsize("日本語のテキスト", 4) == "日本語…"
    assert ellipsize("日本語", 3) == "日本語"
    assert ellipsize("🙂🙂🙂🙂", 3) == "🙂🙂…"
    assert ellipsize("café au lait", 5) == "café…"


def test_ellipsize_with_strip_leaves_no_space_before_the_ellipsis() -> None:
    assert ellipsize("one two three", 5) == "one …"
    assert ellipsize("one two three", 5, strip=True) == "one…"
    assert ellipsize("one  two", 8, strip=True) == "one  two"  # not cut: untouched


def test_one_line_flattens_whitespace_then_cuts() -> None:
    assert one_line("  a\n\tb   c \n", 10) == "a b c"
    assert one_line("first line\nsecond line", 12) == "first line …"
    assert one_line("", 3) == ""


def test_agent_title_and_its_inverse() -> None:
    assert agent_title(None, "bash  ls") == "bash  ls"
    assert agent_title("", "bash  ls") == "bash  ls"
    assert agent_title("reviewer", "bash  ls") == "reviewer · bash  ls"
    assert strip_agent("reviewer · bash  ls", "reviewer") == "bash  ls"
    assert strip_agent("bash  ls", "reviewer") == "bash  ls"


def test_agent_header() -> None:
    assert agent_name("mm") == "mm [mm]"
    assert agent_header("coder", "qwen", "local") == ("mm [coder]", " · qwen @ local")
    assert agent_header("coder", "qwen", "local", "mm") == (
        "mm [coder]",
        " · qwen @ local · asked by mm",
    )
