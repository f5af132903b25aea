"""Rich's Markdown, made cheap to build many times: what the answer renders block by block.

An answer is rendered one block at a time, and the block still growing again at every frame, so
building the renderable costs as much as drawing it. Rich's `Markdown` builds a new markdown-it
parser (compiling linkify's regular expressions) for every document, and its code blocks look
the Pygments lexer up by name every time they are drawn: a third of the cost of streaming a
long answer. Here the parser is built once and lexers are looked up once per name; the output
is the same as Rich's, which a test checks line by line and style by style.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import CodeBlock, Markdown
from rich.syntax import Syntax


@lru_cache(maxsize=1)
def _parser() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt().enable("strikethrough").enable("table")  # as Rich builds it


@lru_cache(maxsize=64)
def _lexer(name: str) -> Any:
    """The Pygments lexer for a fence's language, as Rich's Syntax would build it; the name
    itself when Pygments does not know it (Syntax then draws the code as plain text)."""
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(name, stripnl=False, ensurenl=True, tabsize=4)
    except ClassNotFound:
        return name


class _CodeBlock(CodeBlock):
    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        code = str(self.text).rstrip()
        yield Syntax(code, _lexer(self.lexer_name), theme=self.theme, word_wrap=True, padding=1)


class BlockMarkdown(Markdown):
    """`Markdown(markup, code_theme=…, hyperlinks=False)`, built without a new parser."""

    elements = {**Markdown.elements, "fence": _CodeBlock, "code_block": _CodeBlock}

    def __init__(self, markup: str, code_theme: str = "monokai") -> None:  # noqa: D107
        # Rich's own __init__ sets exactly these; the test against Rich keeps them in step.
        self.markup = markup
        self.parsed = _parser().parse(markup)
        self.code_theme = code_theme
        self.justify = None
        self.style = "none"
        self.hyperlinks = False
        self.inline_code_lexer = None
        self.inline_code_theme = code_theme
