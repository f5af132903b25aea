"""theme_style gives what Textual's component classes give, in every theme: the transcript's and
the header's colours are taken from the theme directly, and must not drift from the CSS they
replaced."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widget import Widget

from mm_tui.window.theme_files import load_themes
from mm_tui.window.theme_style import theme_style
from mm_tui.window.transcript.styles import STYLES

THEMES = ["mm-dark", "mm-light", "textual-dark", "textual-light", "ansi-dark", "nord", "gruvbox"]


def css_for(table: dict[str, tuple[str | None, str]]) -> str:
    rules = []
    for name, (color, text_style) in table.items():
        body = (f"color: ${color}; " if color else "") + (
            f"text-style: {text_style};" if text_style else ""
        )
        rules.append(f"Probe > .{name} {{ {body} }}")
    return "\n".join(rules)


# The transcript's parts, and the header's two: the muted folder and the `yolo` badge.
EXTRA = {"header--cwd": ("text-muted", "")}


class Probe(Widget):
    COMPONENT_CLASSES = set(STYLES) | set(EXTRA) | {"header--yolo"}
    DEFAULT_CSS = (
        "Probe { background: $panel; color: $text; }\n"
        + css_for({**STYLES, **EXTRA})
        + "\nProbe > .header--yolo { color: $background; background: $warning; }"
    )


class ProbeApp(App[None]):
    def __init__(self, theme: str) -> None:
        super().__init__()
        for loaded in load_themes().themes:
            self.register_theme(loaded)
        self.theme = theme

    def compose(self) -> ComposeResult:
        yield Probe()


@pytest.mark.parametrize("theme", THEMES)
async def test_theme_style_is_what_the_component_classes_give(theme: str) -> None:
    app = ProbeApp(theme)
    async with app.run_test(size=(40, 5)) as pilot:
        await pilot.pause()
        probe = app.query_one(Probe)
        seen = 0
        for name, spec in {**STYLES, **EXTRA}.items():
            assert theme_style(probe, *spec) == probe.get_component_rich_style(name), name
            seen += 1
        assert theme_style(
            probe, "background", background="warning"
        ) == probe.get_component_rich_style("header--yolo")
        assert seen == len(STYLES) + 1
