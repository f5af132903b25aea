"""The places settings come from, each read into layers (`files.Layer`, which names the place in
error messages): a configuration file, keys given whole (the project's file as read once, the
flags), and environment variables. Then laid over each other, in mm's order: `overlay` does it
when no layer holds a mapping, which is what pydantic-settings' merge (`sources.merged`) gives
such layers, without importing pydantic-settings (10 to 15 ms of window mode's way to ready
with a config file: docs/performance.md); nested mappings, merged key by key, go to it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mm_tui.config.files import Layer, parse_yaml, read_bytes


def file_layers(path: Path, label: str, *, required: bool) -> list[Layer]:
    """A configuration file, read as mm reads one (`files.parse_yaml`). A missing file gives
    nothing, or ConfigError `no such file` when it is `required` (the file `--config` names); a
    folder or an unreadable file is a ConfigError too, never passed over."""
    raw = read_bytes(path, label, required=required)
    return [Layer(label, {} if raw is None else parse_yaml(raw, label).data)]


def given_layers(data: Mapping[str, Any], label: str, *, one_key: bool = False) -> list[Layer]:
    """Keys given whole: the project's file as read once (one label), or the flags (`one_key`:
    a label for each, `flag --max-output`)."""
    if not one_key:
        return [Layer(label, dict(data))]
    return [
        Layer(label.format(key=_kebab(key)), {key: value}, one_key=True)
        for key, value in data.items()
    ]


def environment_layers(names: Mapping[str, str], environ: Mapping[str, str]) -> list[Layer]:
    """A layer for each variable of `names` set in `environ`, under the YAML key `names` gives
    it (`MM_MAX_OUTPUT`: `maxOutput`), its text as it is: pydantic-settings' environment source
    reads a variable so (by its exact name, a field of any type, no prefix). A variable set
    empty counts as unset, as shells make that easy to write."""
    return [
        Layer(f"environment {var}", {key: environ[var]}, one_key=True)
        for var, key in names.items()
        if environ.get(var)
    ]


def overlay(layers: list[Layer]) -> dict[str, Any] | None:
    """The keys of `layers` (lowest first), a later layer's winning; None when one holds a
    mapping, which pydantic-settings merges key by key (`sources.merged`)."""
    merged: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.data.items():
            if isinstance(value, dict):
                return None
            merged[key] = value
    return merged


def _kebab(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", key).lower()
