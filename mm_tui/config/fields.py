"""A settings class's fields and their YAML spelling: what both its validators read (pydantic's,
through `validated_dataclass.py`, and the plain one, `plain_values.py`)."""

from __future__ import annotations

import dataclasses
from typing import Any


def yaml_key(name: str) -> str:
    """A key's YAML spelling: its attribute's name in camelCase (`max_output`: `maxOutput`)."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


_known: dict[type, tuple[dataclasses.Field[Any], ...]] = {}


def settings_fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    """The fields of a settings class (`__dataclass_fields__` also holds its ClassVars)."""
    found = _known.get(cls)
    if found is None:
        found = _known[cls] = dataclasses.fields(cls)
    return found
