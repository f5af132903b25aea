"""Settings made of plain values checked without pydantic: start-up's sake.

A configuration file most often sets a few plain keys (`theme: mm-dark`, `maxOutput: 20000`,
`sandbox: auto`). Validating them with pydantic costs its import and the building of the whole
settings schema, nested classes included: 60 to 115 ms between the first frame and "ready"
(bench/bench_window_startup.py, docs/performance.md). So a mapping whose every value already is
what its field asks for (a `str` for a `str`, an `int` within its bounds for an `int`, one of a
`Literal`'s words, a list of texts for `list[str]`) is taken here, as pydantic would take it.
Anything else (a key this does not know, a nested mapping, a secret, a value pydantic would have
to convert or refuse, a field with an after-check) returns None, and pydantic decides, with its
own conversions and its error messages. pydantic stays the one judge of what is wrong; this only
says yes where it would say yes to the same value unchanged (tests/core/test_plain_values.py
holds it to pydantic over generated mappings).

The rules are read from the fields' own annotations, evaluated with stand-ins for `bound`,
`before` and `after`, so there is no second list of fields to keep in step.
"""

from __future__ import annotations

import dataclasses
import math
import operator
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from mm_tui.config.fields import settings_fields, yaml_key

Check = Callable[[Any], tuple[bool, Any]]
"""A field's check: (accepted, the value as pydantic would store it)."""


class _Bounds:
    def __init__(self, **bounds: float) -> None:
        self.bounds = bounds


class _Before:
    def __init__(self, check: Callable[[Any], Any]) -> None:
        self.check = check


class _After:
    def __init__(self, check: Callable[[Any], Any]) -> None:
        self.check = check


class _Key(typing.NamedTuple):
    name: str  # the attribute
    check: Check | None  # None: pydantic decides
    alias: bool  # the key is the YAML spelling
    attribute: bool  # the key is the attribute's name (a one-word key is both)
    # (SettingsBase allows both spellings unless a call says otherwise: populate_by_name)


def plain_fields(cls: type) -> dict[str, _Key]:
    """Each key a mapping may give, by both spellings, with its field's check."""
    found = _plain.get(cls)
    if found is None:
        module = vars(sys.modules[cls.__module__])
        names = {**module, "bound": _Bounds, "before": _Before, "after": _After}
        found = {}
        for each in settings_fields(cls):
            check = _check_of(each.type, names)
            alias = yaml_key(each.name)
            found[alias] = _Key(each.name, check, True, alias == each.name)
            found[each.name] = _Key(each.name, check, alias == each.name, True)
        _plain[cls] = found
    return found


_plain: dict[type, dict[str, _Key]] = {}


def plain_instance(cls: type, obj: Any, *, by_alias: bool | None, by_name: bool | None) -> Any:
    """An instance of `cls` from `obj` when every value is plain and valid, else None."""
    if type(obj) is not dict:
        return None
    fields = plain_fields(cls)
    given: dict[str, Any] = {}
    for key, value in obj.items():
        entry = fields.get(key)
        if entry is None or entry.check is None or entry.name in given:  # pydantic's call
            return None
        if not (
            (entry.alias and by_alias is not False) or (entry.attribute and by_name is not False)
        ):
            return None
        ok, given[entry.name] = entry.check(value)
        if not ok:
            return None
    return _made(cls, given)


def _made(cls: type, given: dict[str, Any]) -> Any:
    made = object.__new__(cls)
    for each in settings_fields(cls):
        if each.name in given:
            value = given[each.name]
        elif each.default_factory is not dataclasses.MISSING:
            value = each.default_factory()
        elif each.default is not dataclasses.MISSING:
            value = each.default
        else:  # a required field not given: pydantic's error
            return None
        made.__dict__[each.name] = value
    try:
        made._checked()
    except Exception:  # noqa: BLE001 - pydantic gives the error with its place
        return None
    made.__dict__["_fields_set"] = frozenset(given)
    return made


def _check_of(annotation: Any, names: dict[str, Any]) -> Check | None:
    """The check of one annotation (a string, from `from __future__ import annotations`)."""
    try:
        kind = eval(annotation, names) if isinstance(annotation, str) else annotation  # noqa: S307
    except Exception:  # noqa: BLE001 - a name only pydantic knows (SecretStr): its field
        return None
    before: Callable[[Any], Any] | None = None
    bounds: dict[str, float] = {}
    if typing.get_origin(kind) is typing.Annotated:
        extras = kind.__metadata__
        if any(isinstance(extra, _After) for extra in extras) or len(extras) > 2:
            return None
        befores = [extra.check for extra in extras if isinstance(extra, _Before)]
        if len(befores) > 1:
            return None
        before = befores[0] if befores else None
        for extra in extras:
            if isinstance(extra, _Bounds):
                bounds.update(extra.bounds)
        kind = kind.__origin__
    base = _base_check(kind)
    if base is None:
        return None
    return _wrapped(base, before, bounds)


def _wrapped(base: Check, before: Callable[[Any], Any] | None, bounds: dict[str, float]) -> Check:
    def check(value: Any) -> tuple[bool, Any]:
        if before is not None:
            try:
                value = before(value)
            except Exception:  # noqa: BLE001 - pydantic says what is wrong
                return False, None
        ok, value = base(value)
        if ok and bounds and value is not None and not _within(value, bounds):
            return False, None
        return ok, value

    return check


_LIMITS: Mapping[str, Callable[[float, float], bool]] = {
    "ge": operator.ge,
    "gt": operator.gt,
    "le": operator.le,
    "lt": operator.lt,
}


def _within(value: float, bounds: dict[str, float]) -> bool:
    """Every bound holds; a bound of another kind (`multiple_of`) is pydantic's to judge."""
    return all(name in _LIMITS and _LIMITS[name](value, limit) for name, limit in bounds.items())


def _base_check(kind: Any) -> Check | None:
    """Exact types only: a value pydantic would convert (a text for a number) is its call."""
    simple = _SIMPLE.get(kind)
    if simple is not None:
        return simple
    origin = typing.get_origin(kind)
    if origin is typing.Literal:
        words = kind.__args__
        if not all(type(word) is str for word in words):
            return None
        return lambda value: (type(value) is str and value in words, value)
    if origin is list and kind.__args__ == (str,):
        return lambda value: (
            type(value) is list and all(type(each) is str for each in value),
            list(value) if type(value) is list else None,
        )
    if origin in (typing.Union, types.UnionType):
        members = [_base_check(member) for member in kind.__args__]
        if any(member is None for member in members):
            return None
        return _first_of(typing.cast("list[Check]", members))
    return None


def _first_of(members: list[Check]) -> Check:
    def check(value: Any) -> tuple[bool, Any]:
        for member in members:
            ok, made = member(value)
            if ok:
                return True, made
        return False, None

    return check


def _float(value: Any) -> tuple[bool, Any]:
    if type(value) is int or (type(value) is float and math.isfinite(value)):
        return True, float(value)
    return False, None


_SIMPLE: Mapping[Any, Check] = {
    str: lambda value: (type(value) is str, value),
    bool: lambda value: (type(value) is bool, value),
    int: lambda value: (type(value) is int, value),
    float: _float,
    type(None): lambda value: (value is None, value),
}
