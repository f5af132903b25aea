"""Window mode, the full-screen Textual front end: the app (`app.py`: boot, themes, the palette,
the screens), its screens (`screens/`), the widgets they compose (`widgets/`), the transcript
(`transcript/`: the store the engine's events build, the renderers that draw each item and the
view that scrolls them), and the themes (`theme_files.py`, `theme_style.py`, `themes/`)."""
