"""Theme files read into Textual `Theme` objects at start-up.

mm's own themes are package data (`mm_tui/window/themes/*.yaml`, which an installed wheel has:
read from the package's folder, through importlib.resources only when the package is not a
folder, such as a zip); the user's are `$XDG_CONFIG_HOME/mm/themes/*.yaml` (by
default `~/.config/mm/themes/`), read after mm's, so that one of the same name replaces it. A
file is YAML with the fields of Textual's `Theme`:

    name: my-theme          # the file's name without .yaml when left out
    dark: true
    primary: "#5fafd7"      # required; secondary, accent, warning, error, success,
    background: "#1c1c1c"   # foreground, background, surface, panel, boost are optional
    variables:              # Textual's theme variables, e.g. the footer's or the cursor's
      footer-key-foreground: "#5fd7af"

A file that cannot be read, or a key that is unknown or holds a wrong value, leaves that file's
theme out with one line naming the file and the key, which the window shows as a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.color import Color, ColorParseError
from textual.theme import Theme

from mm_tui.core.flat_yaml import read_flat_yaml
from mm_tui.core.frozen import mutable
from mm_tui.core.paths import user_config_dir

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

COLOURS = (
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
)
NUMBERS = ("luminosity_spread", "text_alpha")
KEYS = ("name", *COLOURS, "dark", *NUMBERS, "variables")

# A flat line: `key: value` with a double- or single-quoted value without escapes, true, false or
# a plain word, then perhaps a comment. PyYAML reads such a line the same way unless a key or a
# word is one of YAML 1.1's booleans or null (then PyYAML reads the file).


def builtin_themes_dir() -> Traversable:
    """mm's own theme files, inside the package. The package's folder when it is one (always,
    installed or not): importlib.resources costs about 3 ms of the way to the first frame
    (docs/performance.md), and is left for a package that is not a folder."""
    folder = Path(__file__).parent / "themes"
    if folder.is_dir():
        return folder
    from importlib.resources import files

    return files("mm_tui.window") / "themes"


def user_themes_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CONFIG_HOME/mm/themes`, or `~/.config/mm/themes` (a relative XDG_CONFIG_HOME is
    ignored, as the XDG specification says)."""
    return user_config_dir(environ=environ) / "themes"


class ThemeFileError(Exception):
    """One line: `mm: <file>: <key>: <reason>`."""

    def __init__(self, source: str, reason: str, key: str | None = None) -> None:
        where = f"{source}: {key}" if key else source
        super().__init__(" ".join(f"mm: {where}: {reason}".split()))


@mutable
class LoadedThemes:
    themes: list[Theme] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """One line per theme file left out."""


def load_themes(user_dir: Path | None = None) -> LoadedThemes:
    """mm's themes, then the user's (`user_themes_dir()` unless `user_dir` is given)."""
    loaded = LoadedThemes()
    builtin = builtin_themes_dir()
    entries = [e for e in builtin.iterdir() if e.name.endswith(".yaml")] if builtin.is_dir() else []
    for entry in sorted(entries, key=lambda e: e.name):
        _load_one(entry, f"mm_tui/window/themes/{entry.name}", loaded)
    folder = user_themes_dir() if user_dir is None else user_dir
    if folder.is_dir():
        for path in sorted(folder.glob("*.yaml")):
            _load_one(path, _label(path), loaded)
    return loaded


def _load_one(entry: Traversable, label: str, loaded: LoadedThemes) -> None:
    try:
        text = entry.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        loaded.warnings.append(str(ThemeFileError(label, f"cannot be read ({exc})")))
        return
    try:
        loaded.themes.append(
            parse_theme(text, label, default_name=entry.name.removesuffix(".yaml"))
        )
    except ThemeFileError as exc:
        loaded.warnings.append(str(exc))


def parse_theme(text: str, source: str, *, default_name: str) -> Theme:
    """The theme of one file's text; raises ThemeFileError naming `source` and the key."""
    data = read_flat_yaml(text)
    if data is None:
        data = _read_yaml(text, source)
    if not isinstance(data, dict):
        raise ThemeFileError(source, "not a mapping of theme fields (name, primary, …)")
    fields: dict[str, Any] = {}
    for key, value in data.items():
        key = str(key)
        if key not in KEYS:
            raise ThemeFileError(source, f"unknown key (known: {', '.join(KEYS)})", key)
        if key == "name":
            if not isinstance(value, str) or not value.strip():
                raise ThemeFileError(source, "not a name (non-empty text)", key)
        elif key in COLOURS:
            _check_colour(value, source, key)
        elif key == "dark":
            if not isinstance(value, bool):
                raise ThemeFileError(source, f"not true or false: {value!r}", key)
        elif key in NUMBERS:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ThemeFileError(source, f"not a number: {value!r}", key)
        else:
            _check_variables(value, source)
        fields[key] = value
    if "primary" not in fields:
        raise ThemeFileError(source, "missing (every theme needs a primary colour)", "primary")
    fields.setdefault("name", default_name)
    return Theme(**fields)


def _read_yaml(text: str, source: str) -> object:
    import yaml

    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ThemeFileError(source, f"not valid YAML{line}: {problem}") from None


def _check_colour(value: object, source: str, key: str) -> None:
    if not isinstance(value, str):
        raise ThemeFileError(source, f'not a colour (quote it: "#rrggbb"): {value!r}', key)
    try:
        Color.parse(value)
    except ColorParseError:
        raise ThemeFileError(source, f"not a colour: {value!r}", key) from None


def _check_variables(value: object, source: str) -> None:
    if not isinstance(value, dict):
        raise ThemeFileError(source, "not a mapping of Textual theme variables", "variables")
    known = _variable_names()
    for name, text in value.items():
        key = f"variables.{name}"
        if name not in known:
            raise ThemeFileError(source, "not a Textual theme variable", key)
        if not isinstance(text, str):
            raise ThemeFileError(source, f"not text (quote it): {text!r}", key)


def _variable_names() -> set[str]:
    """The variables a Textual theme defines (those its stylesheets can use)."""
    return set(Theme(name="-", primary="#000000").to_color_system().generate())


def _label(path: Path) -> str:
    """The path as the user would write it: under the home folder with `~`."""
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except ValueError:
        return str(path)
