"""edit_file's pieces on their own: the matcher (edit_match.py) and the diff of replacements."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mm_tui.tools.diff import Diff, apply_replacements, compute_diff, split_lines
from mm_tui.tools.edit_match import Ambiguous, Document, Match, NotFound, closest_region, locate


def patch(old: str, diff: Diff) -> str:
    """Apply `diff` to `old`, checking every context and removed line against `old`."""
    a = split_lines(old)
    out: list[str] = []
    i = 0
    for hunk in diff.hunks:
        start = hunk.old_start - 1  # an insertion too: before that line
        out += a[i:start]
        i = start
        for line in hunk.lines:
            text = line.text + ("\n" if line.eol else "")
            if line.sign in " -":
                assert a[i] == text
                i += 1
            if line.sign in " +":
                out.append(text)
    return "".join(out + a[i:])


@st.composite
def replacements(draw: st.DrawFn) -> tuple[str, list[tuple[int, int, str]]]:
    old = draw(st.text(alphabet="ab\n", max_size=40))
    cuts = sorted(draw(st.lists(st.integers(0, len(old)), max_size=8)))
    pairs = [(cuts[k], cuts[k + 1]) for k in range(0, len(cuts) - 1, 2)]
    texts = draw(st.lists(st.text(alphabet="abc\n", max_size=5), min_size=len(pairs)))
    return old, [(s, e, t) for (s, e), t in zip(pairs, texts, strict=False)]


@settings(max_examples=300, deadline=None)
@given(case=replacements(), context=st.integers(0, 3))
def test_apply_replacements_gives_a_diff_that_patches(case, context: int) -> None:
    old, reps = case
    new, diff = apply_replacements(old, reps, context)
    expected, pos = [], 0
    for start, end, text in reps:
        expected += [old[pos:start], text]
        pos = end
    assert new == "".join([*expected, old[pos:]])
    assert patch(old, diff) == new
    assert diff.added - diff.deleted == len(split_lines(new)) - len(split_lines(old))
    assert diff.empty == (new == old)
    assert diff.added == sum(1 for h in diff.hunks for line in h.lines if line.sign == "+")


def test_apply_replacements_matches_compute_diff() -> None:
    old = "".join(f"line {i}\n" for i in range(1, 40))
    start = old.index("line 20")
    new, diff = apply_replacements(old, [(start, start + 7, "LINE 20\nextra")])
    assert diff == compute_diff(old, new)
    assert diff.numbered() == compute_diff(old, new).numbered()
    tail = old.index("line 39")
    new, diff = apply_replacements(old, [(0, 7, "first"), (tail, len(old), "last")])
    assert diff == compute_diff(old, new)


def test_exact_edges_indent_in_turn() -> None:
    doc = Document("a:\n\tx()\n\ty()\n")
    found = locate(doc, "\tx()", "\tz()")
    assert found == Match(3, 7, "\tz()", 2, relaxed=False)
    found = locate(doc, "x()\n\n", "z()\n\n")
    assert found == Match(4, 7, "z()", 2, relaxed=True)
    found = locate(doc, "  x()\n  y()", "  z()")
    assert found == Match(3, 12, "\tz()", 2, relaxed=True)
    assert isinstance(locate(doc, "w()", "v()"), NotFound)
    assert locate(Document("x\nx\n"), " x", "y") == Ambiguous(2, [1, 2])


def test_reindent_units() -> None:
    # two-space model, tab file; a line deeper than any of old's goes one tab deeper per level
    doc = Document("if a {\n\tb()\n}\n")
    found = locate(doc, "if a {\n  b()\n}", "if a {\n  if c {\n    d()\n  }\n}")
    assert isinstance(found, Match)
    assert found.replacement == "if a {\n\tif c {\n\t\td()\n\t}\n}"
    # alignment spaces that are not a whole level are kept after the converted levels
    doc = Document("f(\n\targ,\n)\n")
    found = locate(doc, "f(\n    arg,\n)", "f(\n    arg,\n      more,\n)")
    assert isinstance(found, Match)
    assert found.replacement == "f(\n\targ,\n\t  more,\n)"


def test_closest_region_prefers_the_likeliest_of_equal_places() -> None:
    text = "func a() {\n\tx := 1\n}\n\nfunc b() {\n\ty := 2\n}\n"
    # "}" lines up in both places; the other line is closer to b's
    assert closest_region(Document(text), "func b() {\n    y := 3\n}") == (
        5,
        ["func b() {", "\ty := 2", "}"],
    )
    assert closest_region(Document(text), "nothing\nlike\nit") is None
    assert closest_region(Document(text), "\n\n") is None
