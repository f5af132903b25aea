"""The transcript of window mode, in one folder:

- `store.py`: the transcript as plain data, made from the engine's events (no Textual);
- `view.py`: the one scroll view that paints it, line by line, with mouse selection;
- `line_cache.py`: what the view keeps of each item at a width (lines, heights, offsets);
- `scrollbar.py`: the scrollbar the view paints in its own lines;
- `renderers/`: one renderer per kind of item, found by the item's type;
- `styles.py`: what each part of an item is drawn in.

Nothing is imported here: the store's users (line mode's tests, the benches) need no Textual.
"""
