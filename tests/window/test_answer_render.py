"""The answer renderer while an answer streams: finished blocks and a growing list's finished
items are drawn once, and what is drawn is what drawing the whole text would give."""

from __future__ import annotations

import pytest
from rich.console import Console
from rich.style import Style

import mm_tui.window.transcript.renderers.answer as answer_module
from mm_tui.window.transcript.renderers.answer import Answer, code_pieces, item_starts
from mm_tui.window.transcript.store import AnswerItem

WIDTH = 50

LISTS = {
    "numbered": "".join(
        f"{i}. **Step {i}**: do the thing number {i} with `code` and a few more words\n"
        for i in range(1, 9)
    ),
    "bullets, nested and continued": (
        "- first, long enough to wrap around at fifty columns wide for sure\n"
        "- second\n  continued on an indented line\n"
        "  - nested one\n  - nested two\n"
        "- third\n* another marker\n+ and another\n"
    ),
    "after a paragraph": "Here is the plan.\n\n1) one\n2) two\n3) three\n4) four\n",
}


def rows(answer: Answer, text: str, *, done: bool = False) -> list[str]:
    item = AnswerItem(id=1)
    item.pieces.append(text)
    item.done = done
    return [strip.text for strip in answer.render(item, WIDTH)]


def fresh() -> Answer:
    console = Console(width=WIDTH, force_terminal=True, color_system="truecolor")
    return Answer(console, lambda name: Style())


def streamed_and_whole(text: str, step: int, cache: str, draw, monkeypatch) -> tuple:  # noqa: ANN001
    """What one renderer draws at every `step` characters of `text` as it streams, and what a
    fresh renderer draws of the same prefixes with the cache `cache` turned off (the block
    drawn whole); then the same for the finished text."""
    streaming = fresh()
    cuts = range(1, len(text) + 1, step)
    got = [draw(streaming, text[:cut]) for cut in cuts] + [draw(streaming, text, done=True)]
    monkeypatch.setattr(answer_module, cache, lambda *args: None)
    wanted = [draw(fresh(), text[:cut]) for cut in cuts] + [draw(fresh(), text, done=True)]
    return got, wanted


@pytest.mark.parametrize("name", LISTS)
def test_a_growing_list_draws_as_the_whole_block_would(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    got, wanted = streamed_and_whole(LISTS[name], 7, "item_starts", rows, monkeypatch)
    assert got == wanted


def test_finished_items_are_drawn_once(monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[int] = []
    block = Answer._block

    def counting(self: Answer, source: str, width: int, *rest: object) -> list:
        drawn.append(len(source))
        return block(self, source, width, *rest)

    monkeypatch.setattr(Answer, "_block", counting)
    text = "".join(f"- item {i}: some words about it\n" for i in range(60))
    answer = fresh()
    frames = 0
    for cut in range(4, len(text) + 1, 4):
        rows(answer, text[:cut])
        frames += 1
    longest_item = max(len(line) for line in text.splitlines()) + 1
    # each finished item once, then only the last item at every frame: never the whole list
    assert sum(drawn) <= len(text) + frames * longest_item
    assert max(drawn) <= longest_item


def test_item_starts() -> None:
    text = "1. a\n   more\n2. b\n10. c\nlazy\n"
    assert item_starts(text, 0, len(text)) == [0, 13, 18]
    assert item_starts("- a\n- b\n", 0, 8) == [0, 4]
    assert item_starts("- a\n* b\n", 0, 8) is None  # another bullet: another list
    assert item_starts("1. a\n2) b\n", 0, 9) is None
    assert item_starts("para\n- x\n", 0, 9) is None  # not a list from its first line
    fenced = "- a\n  ```\n  code\n  ```\n- b\n"
    assert item_starts(fenced, 0, len(fenced)) is None  # a fence: kept whole


CODE = {
    "python, with blank lines and a wrapping line": (
        "Some code:\n\n```python\n"
        + "".join(
            f"value_{i} = compute({i}, 'text')  # note {i}\n" + ("\n" if i % 5 == 4 else "")
            for i in range(40)
        )
        + "result = [value for value in range(100) if value % 3 == 0 and value % 7 != 2]\n"
        + "```\n"
    ),
    "no language": "```\n" + "".join(f"line {i}\n" for i in range(30)) + "```\n",
}


def styled_rows(answer: Answer, text: str, *, done: bool = False) -> list[list[tuple]]:
    """Each row as (text, style) per cell: what the terminal shows, however Rich cut it."""
    item = AnswerItem(id=1)
    item.pieces.append(text)
    item.done = done
    return [
        [(char, segment.style) for segment in strip for char in segment.text]
        for strip in answer.render(item, WIDTH)
    ]


@pytest.mark.parametrize(
    "name",
    # the long one renders every prefix of 40 lines of code: about 5 s
    [pytest.param(name, marks=pytest.mark.slow) if "python" in name else name for name in CODE],
)
def test_a_growing_code_block_draws_as_the_whole_block_would(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    got, wanted = streamed_and_whole(CODE[name], 5, "code_pieces", styled_rows, monkeypatch)
    assert got == wanted


def test_a_growing_code_block_draws_its_finished_pieces_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    drawn: list[int] = []
    block = Answer._block

    def counting(self: Answer, source: str, width: int) -> list:
        drawn.append(source.count("\n"))
        return block(self, source, width)

    monkeypatch.setattr(Answer, "_block", counting)
    text = "```python\n" + "".join(f"x_{i} = {i}\n" for i in range(200))
    answer = fresh()
    for cut in range(4, len(text) + 1, 4):
        rows(answer, text[:cut])
    # never the whole block: at most a piece and its fence line, however long the block
    assert max(drawn) <= answer_module.CODE_PIECE * 2 + 1


def test_code_pieces() -> None:
    text = "```py\n" + "a\n" * 5 + "\n" + "b\n" * 3
    assert code_pieces(text, 0, len(text), size=3) == [6, 12, 19]
    assert code_pieces("```py\nx\n```\n", 0, 12) is None  # closed: drawn whole
    assert code_pieces("plain\ntext\n", 0, 11) is None
