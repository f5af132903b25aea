"""KeyBar: the keys that work now, on the window's last line, and the command palette's key at
the right; a click on a key presses it.

It draws what Textual's Footer draws (the same cells, in the theme's footer colours), as one
widget painting one line: the Footer mounts a widget per key and mounts them all again at every
change of focus, and its stylesheet costs the first frame (docs/performance.md). Left out:
the Footer's hover highlight, binding groups (mm has none) and scrolling a bar too long for the
window (where the keys do not fit, each description is cut to its last word, `allow for the
session` to `session`; what still does not fit is cut with an ellipsis, the palette key
stays)."""

from __future__ import annotations

from typing import Any

from rich.style import Style
from rich.text import Text
from textual import events
from textual.color import Color
from textual.widget import Widget

from mm_tui.window.theme_style import theme_style


class KeyBar(Widget):
    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        background: $footer-background;
        color: $footer-foreground;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's spelling
        super().__init__(id=id)
        self._spans: list[tuple[int, int, str, bool]] = []  # start, end, key, enabled
        self._drawn: object = None  # the keys the bar last drew (`keys()`)

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, _screen: Any) -> None:
        """Drawn again only when the keys changed: the screen says its bindings changed at every
        change of focus (the prompt's, as the window starts, while the boot runs), and a bar
        drawn again for the same keys cost 2 to 3 ms."""
        if self._drawn is None or self.keys() != self._drawn:  # None: drawn at the first frame
            self.refresh()

    def keys(self) -> tuple[list[tuple[str, str, str, bool]], tuple[str, str, str, bool] | None]:
        """(key, shown key, description, enabled) of each key on the left, one per action in
        the order the screen gives them, and the command palette's."""
        app = self.app
        active = self.screen.active_bindings
        left: list[tuple[str, str, str, bool]] = []
        actions: set[str] = set()
        for _node, binding, enabled, _tooltip in active.values():
            if binding.show and binding.action not in actions:
                actions.add(binding.action)
                left.append(
                    (binding.key, app.get_key_display(binding), binding.description, enabled)
                )
        palette = None
        if app.ENABLE_COMMAND_PALETTE and app.COMMAND_PALETTE_BINDING in active:
            _node, binding, enabled, _tooltip = active[app.COMMAND_PALETTE_BINDING]
            palette = (binding.key, app.get_key_display(binding), binding.description, enabled)
        return left, palette

    def render(self) -> Text:
        width = self.content_size.width
        key_style = theme_style(
            self, "footer-key-foreground", "bold", background="footer-key-background"
        )
        text_style = theme_style(
            self, "footer-description-foreground", background="footer-description-background"
        )
        dim = Style(dim=True)
        keys = self._drawn = self.keys()
        left, palette = keys
        spans: list[tuple[int, int, str, bool]] = []
        right = Text()
        if palette is not None:
            key, shown, description, enabled = palette
            base = self.rich_style
            under = Color.from_rich_color(base.bgcolor) if base.bgcolor else Color(0, 0, 0)
            edge = Color.parse(self.app.theme_variables.get("foreground", "#ffffff"))
            right.append("▏", Style.from_color((under + edge.multiply_alpha(0.2)).rich_color))
            right.append(shown, key_style + dim if not enabled else key_style)
            right.append(f" {description} ", text_style + dim if not enabled else text_style)
            start = max(0, width - right.cell_len)
            spans.append((start + 1, width, key, enabled))
        line = Text()
        room = max(0, width - right.cell_len)
        full = sum(len(shown) + len(description) + 3 for _key, shown, description, _ in left)
        if full > room:  # too narrow (60 columns cut `n never`): each description's last word
            left = [(k, shown, d.split()[-1] if d else d, e) for k, shown, d, e in left]
        for key, shown, description, enabled in left:
            start = line.cell_len
            if start >= room:
                break
            line.append(f" {shown} ", key_style + dim if not enabled else key_style)
            line.append(f"{description} ", text_style + dim if not enabled else text_style)
            spans.append((start, min(line.cell_len, room), key, enabled))
        if line.cell_len > room:
            line.truncate(room, overflow="ellipsis")
        line.pad_right(room - line.cell_len)
        line.append_text(right)
        self._spans = spans
        return line

    def on_click(self, event: events.Click) -> None:
        for start, end, key, enabled in self._spans:
            if start <= event.x < end:
                if enabled:
                    self.app.simulate_key(key)
                else:
                    self.app.bell()
                return
