"""The renderers of the transcript's items, one per item type, and the registry the view asks.

Each renderer draws one kind of item as lines (`Strip`s) at a width, estimates its height
without drawing it (so that items far from the screen cost nothing), and says whether a blank
line sets it apart from what is above (`margin_before`) and whether its lines already carry the
view's base style (`draws_base`). A new kind of item is a new store class plus a renderer
registered in `by_item.py`; the view does not change.

The package itself imports nothing: the status line reaches the spinner's frames here, on the way
to the first frame, and the transcript of the first frame is empty. The renderers load when the
view first measures or draws an item (docs/performance.md).
"""
