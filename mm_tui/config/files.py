"""Reading a configuration file: its bytes, its YAML (a key given twice refused), and each
place settings come from as a `Layer` that error messages can name.
"""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mm_tui.core.frozen import mutable

if TYPE_CHECKING:
    import yaml


HOME_CONFIG = Path(".config/mm/config.yaml")
PROJECT_CONFIG = Path(".mm/config.yaml")


class ConfigError(Exception):
    """A bad file or value: start-up stops with this one line, which names the file, key, reason."""

    def __init__(self, source: str, reason: str, key: str | None = None) -> None:
        self.source = source
        self.key = key
        self.reason = reason
        where = f"{source}: {key}" if key else source
        super().__init__(" ".join(f"mm: {where}: {reason}".split()))


@mutable
class Layer:
    """One place settings come from: its label in error messages, and the keys it gives."""

    label: str  # "~/.config/mm/config.yaml", "environment MM_MODEL", "flag --theme"
    data: dict[str, Any]
    one_key: bool = False  # the label already names the key (environment variables, flags)

    def __post_init__(self) -> None:
        # Hide the key from the moment it is read: whatever shows a layer shows stars.
        if isinstance(self.data.get("apiKey"), str):
            from pydantic import SecretStr

            self.data = {**self.data, "apiKey": SecretStr(self.data["apiKey"])}


_loader: type | None = None


def _unique_key_loader() -> type:
    """A SafeLoader that refuses a key given twice: PyYAML keeps the last of two equal keys; in
    a config file that hides a mistake. Made at the first file read that is more than flat
    `key: value` lines (`core/flat_yaml.py` reads those): without such a file, mm never loads
    PyYAML (docs/performance.md)."""
    global _loader
    if _loader is not None:
        return _loader
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor` may be overridden
                    continue
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, Hashable):
                    if key in seen:
                        raise yaml.MarkedYAMLError(
                            problem=f'key "{key}" appears twice', problem_mark=key_node.start_mark
                        )
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

    _loader = UniqueKeyLoader
    return _loader


def read_yaml(path: Path, label: str, *, required: bool) -> Layer:
    raw = read_bytes(path, label, required=required)
    return Layer(label, {}) if raw is None else parse_yaml(raw, label)


def read_bytes(path: Path, label: str, *, required: bool) -> bytes | None:
    """A config file's bytes; None when it is missing and not required."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        if required:
            raise ConfigError(label, "no such file") from None
        return None
    except OSError as exc:
        raise ConfigError(label, f"cannot read: {exc.strerror or exc}") from None


def parse_yaml(raw: bytes, label: str) -> Layer:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        reason = f"not valid UTF-8: line {line}, byte 0x{raw[exc.start]:02x}"
        raise ConfigError(label, reason) from None
    from mm_tui.core.flat_yaml import is_blank, read_flat_yaml

    flat = read_flat_yaml(text, unique=True)
    if flat is not None:  # plain keys, read as PyYAML reads them, without its import
        return Layer(label, flat)
    if is_blank(text):  # an empty file, or only comments, as PyYAML reads it: nothing
        return Layer(label, {})
    import yaml

    try:
        data = yaml.load(text, Loader=_unique_key_loader())  # a SafeLoader: no Python objects
    except yaml.YAMLError as exc:
        raise ConfigError(label, f"not valid YAML: {_yaml_reason(exc)}") from None
    if data is None:  # an empty file, or only comments
        return Layer(label, {})
    if not isinstance(data, dict):
        kind = {list: "a list", str: "a string"}.get(type(data), type(data).__name__)
        raise ConfigError(label, f"the top level should be a mapping of keys, not {kind}")
    for key in data:
        if not isinstance(key, str):
            raise ConfigError(label, f'unknown key "{key}"')
    return Layer(label, data)


def _yaml_reason(exc: yaml.YAMLError) -> str:
    import yaml  # loaded already: `exc` is one of its errors

    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"line {mark.line + 1}, column {mark.column + 1}: {exc.problem}"
    return str(exc)
