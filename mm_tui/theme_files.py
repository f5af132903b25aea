"""Themes loaded from the files of `themes/` into Textual `Theme` objects at start-up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.color import Color
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


def parse_flat_yaml(text: str) -> dict[str, str | bool]:
    """A theme file is flat YAML: `key: value` lines and comments. Read by hand because importing
    a YAML parser costs the first frame more than the whole file is worth."""
    data: dict[str, str | bool] = {}
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#") or ":" not in line:
            continue
        key, _, value = line.partition(":")
        value = value.strip().strip("\"'")
        data[key.strip()] = {"true": True, "false": False}.get(value.lower(), value)
    return data


def load_themes(folder: Path = THEMES_DIR) -> list[Theme]:
    """Every `*.yaml` theme of the folder; a broken file is skipped rather than stopping mm."""
    themes = []
    for path in sorted(folder.glob("*.yaml")):
        try:
            data = parse_flat_yaml(path.read_text(encoding="utf-8"))
            name = str(data.pop("name", path.stem))
            for key, value in data.items():
                if isinstance(value, str) and key not in ("variables",):
                    Color.parse(value)  # a colour Textual cannot read fails here, not on screen
            fields: dict[str, Any] = {k: v for k, v in data.items() if k in FIELDS}
            themes.append(Theme(name=name, **fields))  # Theme checks each field's type
        except Exception:  # noqa: BLE001, S112 - one bad theme file must not stop start-up
            continue
    return themes
