"""The registry of the item renderers the view asks: one renderer per item type (the
package's docstring says what a renderer does)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from rich.console import Console
from rich.style import Style
from textual.strip import Strip

from mm_tui.window.transcript.renderers.answer import DARK_CODE_THEME, Answer
from mm_tui.window.transcript.renderers.child_header import ChildHeader
from mm_tui.window.transcript.renderers.notice import NoticeLine
from mm_tui.window.transcript.renderers.recap import Recap
from mm_tui.window.transcript.renderers.thought import Thought
from mm_tui.window.transcript.renderers.tool_line import ToolLine
from mm_tui.window.transcript.renderers.user_message import UserMessage
from mm_tui.window.transcript.store import (
    AgentHeaderItem,
    AnswerItem,
    Item,
    NoticeItem,
    RecapItem,
    ThoughtItem,
    ToolItem,
    UserItem,
)


class ItemRenderer(Protocol):
    margin_before: bool
    draws_base: bool

    def render(self, item: Any, width: int) -> list[Strip]: ...

    def estimate(self, item: Any, width: int) -> int: ...


class Renderers:
    """The renderers for one view, made with its console and its styles (`style(name)`, the
    theme's style of a part such as `tool--ok`; `base` is the view's own). The tool line's and
    the answer's renderers are also reached by name: the view draws tool headers live and tells
    the answer renderer about code themes and streaming rows."""

    def __init__(
        self,
        console: Console,
        style: Callable[[str], Style],
        code_theme: str = DARK_CODE_THEME,
    ) -> None:
        self.tool = ToolLine(console, style)
        self.answer = Answer(console, style, code_theme=code_theme)
        self._by_type: dict[type[Item], ItemRenderer] = {
            UserItem: UserMessage(console, style),
            AnswerItem: self.answer,
            ThoughtItem: Thought(console, style),
            ToolItem: self.tool,
            RecapItem: Recap(console, style),
            AgentHeaderItem: ChildHeader(console, style),
            NoticeItem: NoticeLine(console, style),
        }

    def of(self, item: Item) -> ItemRenderer:
        """The renderer of an item, by its type or the nearest registered base (a compaction's
        line is a tool line). A type without one is a mistake, said at once."""
        kind = type(item)
        renderer = self._by_type.get(kind)
        if renderer is None:
            for base in kind.__mro__[1:]:
                renderer = self._by_type.get(base)
                if renderer is not None:
                    self._by_type[kind] = renderer
                    break
            else:
                raise LookupError(f"no renderer for {kind.__name__}")
        return renderer
