"""CroppedCompositor: Textual's compositor, asking only the widgets a partial update touches for
only the rows it touches.

Why: in Textual 8.2 a partial update (the spinner's one row, a streaming answer's last lines)
asks every visible widget whose *clip* overlaps the update for its lines, and for all of them.
The clip of a widget laid out in the screen is the whole screen, so each spinner frame rendered
the transcript's 24 rows, the prompt, the key bar and the header too. A stand-in for
`Compositor._get_renders` (what it saves: docs/performance.md): here a widget is asked only when
the part of it that is on screen overlaps the update, and only for the update's rows; what
Textual then does with the lines (cutting them at the widgets' edges, writing the changed spans)
is its own.

A full update, and a screenshot, crop to the whole screen: every widget is asked for all of its
visible lines, as before.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual._compositor import Compositor
from textual.geometry import Region
from textual.strip import Strip


class CroppedCompositor(Compositor):
    def _get_renders(
        self, crop: Region | None = None
    ) -> Iterable[tuple[Region, Region, list[Strip]]]:
        if crop is None:
            yield from super()._get_renders(crop)
            return
        top, bottom = crop.y, crop.bottom
        for widget, (region, clip) in self.visible_widgets.items():
            shown = region.intersection(clip)
            if not crop.overlaps(shown):
                continue
            first, last = max(shown.y, top), min(shown.bottom, bottom)
            part = Region(shown.x, first, shown.width, last - first)
            # (region, part) as Textual's own pairs go: the lines are those of `part`, the
            # widget's region says where its cuts are
            yield (
                region,
                part,
                widget.render_lines(part.translate((-region.x, -region.y))),
            )
