"""BlockMarkdown draws exactly what Rich's Markdown draws, only cheaper to build."""

from __future__ import annotations

import pytest
from rich.console import Console
from rich.markdown import Markdown

from mm_tui.terminal.block_markdown import BlockMarkdown

DOCUMENTS = {
    "prose": "# Title\n\nSome *emphasis*, **strong**, `code`, ~~gone~~ and a [link](http://x.y).",
    "lists": "- one\n- two\n  - nested\n\n1. first\n2. second",
    "python": "```python\ndef f(x):\n\treturn x + 1  # tab inside\n```",
    "unknown language": "```klingon\nqapla'\n```",
    "indented code": "    plain = code\n    block = True",
    "quote and table": "> quoted\n> text\n\n| a | b |\n|---|---|\n| 1 | 2 |",
    "empty": "",
}


def lines(renderable: object, width: int) -> list[list[tuple[str, str]]]:
    console = Console(width=width, color_system="truecolor", force_terminal=True)
    options = console.options.update(width=width)
    return [
        [(segment.text, str(segment.style)) for segment in line]
        for line in console.render_lines(renderable, options, pad=True)
    ]


@pytest.mark.parametrize("name", DOCUMENTS)
@pytest.mark.parametrize("width", [20, 80])
def test_the_same_lines_and_styles_as_rich(name: str, width: int) -> None:
    source = DOCUMENTS[name]
    ours = lines(BlockMarkdown(source, code_theme="monokai"), width)
    rich = lines(Markdown(source, code_theme="monokai", hyperlinks=False), width)
    assert ours == rich
    assert name == "empty" or ours  # something was drawn


def test_the_parser_is_built_once() -> None:
    from mm_tui.terminal.block_markdown import _parser

    _parser.cache_clear()
    first = BlockMarkdown("a").parsed
    assert first and BlockMarkdown("b").parsed[1].content == "b"
    assert (_parser.cache_info().misses, _parser.cache_info().hits) == (1, 1)
