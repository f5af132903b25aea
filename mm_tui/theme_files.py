"""Themes loaded from the files of `themes/` into Textual `Theme` objects at start-up."""

from __future__ import annotations

from pathlib import Path

from textual.theme import Theme

THEMES_DIR = Path(__file__).resolve().parent.parent / "themes"
FIELDS = {
    "primary",
    "secondary",
    "accent",
    "warning",
    "error",
    "success",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
    "dark",
    "variables",
}


def load_themes(folder: Path = THEMES_DIR) -> list[Theme]:
    """Every `*.yaml` theme of the folder; a broken file is skipped rather than stopping mm."""
    import yaml

    themes = []
    for path in sorted(folder.glob("*.yaml")):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            name = str(data.pop("name", path.stem))
            themes.append(Theme(name=name, **{k: v for k, v in data.items() if k in FIELDS}))
        except Exception:  # noqa: BLE001, S112 - one bad theme file must not stop start-up
            continue
    return themes
