"""What each line of a unified diff is, as both front ends colour it (one rule, in tools/diff.py)."""

from __future__ import annotations

from mm_tui.tools.diff import compute_diff, unified_line_kinds


def test_headers_only_before_the_first_hunk() -> None:
    # A SQL comment removed and a `++` line added: inside the hunk they read `--- …` and `+++ …`.
    diff = compute_diff("-- old comment\nx\n", "++i;\nx\n").unified("q.sql")
    lines = diff.rstrip("\n").split("\n")
    assert lines[:2] == ["--- a/q.sql", "+++ b/q.sql"]
    assert "--- old comment" in lines and "+++i;" in lines
    kinds = dict(zip(lines, unified_line_kinds(lines), strict=True))
    assert kinds["--- a/q.sql"] == kinds["+++ b/q.sql"] == "header"
    assert kinds["--- old comment"] == "removed"
    assert kinds["+++i;"] == "added"
    assert kinds[" x"] == "other"
    assert [k for k in kinds.values() if k == "hunk"] == ["hunk"]
