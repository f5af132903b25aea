"""Rich's Markdown, made cheap to build many times: what the answer renders block by block.

An answer is rendered one block at a time, and the block still growing again at every frame, so
building the renderable costs as much as drawing it. Rich's `Markdown` builds a new markdown-it
parser (compiling linkify's regular expressions) for every document, and its code blocks look
the Pygments lexer up by name every time they are drawn: a large share of the cost of streaming
a long answer (docs/performance.md). Here the parser is built once and lexers are looked up once
per name; the output is the same as Rich's, which a test checks line by line and style by style.
Only an ordered list can be told its numbers, so that one item of a growing list drawn alone is
drawn as in the list.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import CodeBlock, ListElement, Markdown
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


# The languages models fence most often, with the names they write: their lexers are made ahead
# of the first code block (`warm_lexers`). Pygments compiles a lexer's regular expressions when
# its class is first used: 22 ms for Python, 11 for JavaScript, 70 ms for these together, which
# the first code block of each would cost the frame that draws it.
COMMON_FENCES = (
    "python", "py", "bash", "sh", "shell", "console", "javascript", "js", "typescript", "ts",
    "json", "diff", "yaml", "toml", "rust", "go", "c", "cpp", "java", "html",
)  # fmt: skip


def warm_lexers(names: tuple[str, ...] = COMMON_FENCES) -> None:
    """Make the lexers of `names` now: what the window's Markdown thread does once ready."""
    for name in names:
        _lexer(name)


class _CodeBlock(CodeBlock):
    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        code = str(self.text).rstrip()
        yield Syntax(code, _lexer(self.lexer_name), theme=self.theme, word_wrap=True, padding=1)


class _ListElement(ListElement):
    """An ordered list whose numbers can be given: an item of a growing list drawn alone takes
    the number and the number width it has in the whole list (Rich numbers a list from its
    first marker and sizes the numbers on its length, which one item alone does not know)."""

    numbers: tuple[int, int] | None = None

    @classmethod
    def create(cls, markdown: Markdown, token: Any) -> ListElement:
        element = super().create(markdown, token)
        if token.level == 0 and isinstance(element, _ListElement):
            element.numbers = getattr(markdown, "numbers", None)
        return element

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.numbers is None:
            yield from super().__rich_console__(console, options)
            return
        number, last_number = self.numbers
        for index, item in enumerate(self.items):
            yield from item.render_number(console, options, number + index, last_number)


class BlockMarkdown(Markdown):
    """`Markdown(markup, code_theme=…, hyperlinks=False)`, built without a new parser.

    `numbers`, (first number, last number) as Rich's list passes them to its items, numbers the
    top-level ordered list of `markup` as if it were part of a longer one."""

    elements = {
        **Markdown.elements,
        "fence": _CodeBlock,
        "code_block": _CodeBlock,
        "ordered_list_open": _ListElement,
    }

    def __init__(  # noqa: D107
        self, markup: str, code_theme: str = "monokai", numbers: tuple[int, int] | None = None
    ) -> None:
        # Rich's own __init__ sets exactly these; the test against Rich keeps them in step.
        self.markup = markup
        self.parsed = _parser().parse(markup)
        self.code_theme = code_theme
        self.justify = None
        self.style = "none"
        self.hyperlinks = False
        self.inline_code_lexer = None
        self.inline_code_theme = code_theme
        self.numbers = numbers  # ours: read by _ListElement
