"""The fields of a `@frozen` or `@mutable` class (core/frozen.py), collected as
`dataclasses.dataclass(init=False, repr=False, eq=False)` collects them, without calling it.

That call was there for the fields alone, and cost about 45 µs a class, for the hundred classes
mm makes on the way from its first frame to ready (docs/performance.md): it runs a regular
expression and module look-ups on each string annotation three times over (is it a `ClassVar`,
an `InitVar`, `KW_ONLY`?), then builds what `init=False, repr=False, eq=False` leave unused.
This reads each annotation once and leaves the class as dataclass does: the same `Field` objects
in `__dataclass_fields__` (a `ClassVar` among them, marked so), `__dataclass_params__`, the
defaults as class attributes, `__match_args__`, and dataclass's errors for a mutable default or
a required argument after a defaulted one. `InitVar` is refused: nothing here uses one.
tests/core/test_frozen.py holds it to dataclass.
"""

from __future__ import annotations

import abc
import dataclasses
import re
import sys
import types
import typing
from dataclasses import KW_ONLY, MISSING, Field, InitVar
from typing import Any

_PRIVATE = vars(dataclasses)  # dataclass's markers, which its functions read
_FIELD = _PRIVATE["_FIELD"]
_FIELD_CLASSVAR = _PRIVATE["_FIELD_CLASSVAR"]
_DataclassParams = _PRIVATE["_DataclassParams"]
_GenericAlias = vars(typing)["_GenericAlias"]
_HEAD = re.compile(r"^(?:\s*(\w+)\s*\.)?\s*(\w+)")  # dataclass's reading of a string annotation
_heads: dict[str, tuple[str | None, str]] = {}  # its reading of each annotation once: they repeat


def dataclass_fields(cls: type) -> tuple[Field[Any], ...]:
    """Make `cls` a dataclass without methods, as `dataclass(init=False, repr=False, eq=False)`
    would, and give its fields as `dataclasses.fields` does: what core/frozen.py builds on."""
    fields: dict[str, Any] = {}  # name -> Field
    frozen_base = False
    for base in cls.__mro__[-1:0:-1]:  # the bases' fields first, a later one's overriding
        base_fields = getattr(base, "__dataclass_fields__", None)
        if base_fields is not None:
            for f in base_fields.values():
                fields[f.name] = f
            params = getattr(base, "__dataclass_params__", None)
            frozen_base = frozen_base or bool(params and params.frozen)
    annotations = cls.__dict__.get("__annotations__", {})
    own = _own_fields(cls, annotations)
    for f in own:
        fields[f.name] = f
        if isinstance(getattr(cls, f.name, None), Field):  # the default, not the Field, stays
            if f.default is MISSING:
                delattr(cls, f.name)
            else:
                setattr(cls, f.name, f.default)
    for name, value in cls.__dict__.items():
        if isinstance(value, Field) and name not in annotations:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    if frozen_base:  # dataclass's error, as frozen.py never said `frozen` (it makes the methods)
        raise TypeError("cannot inherit non-frozen dataclass from a frozen one")
    made: Any = cls
    made.__dataclass_fields__ = fields
    made.__dataclass_params__ = _params()
    every = tuple(f for f in fields.values() if f._field_type is _FIELD)
    positional = [f for f in every if f.init and not f.kw_only]
    _check_defaults_first(positional)
    if "__match_args__" not in cls.__dict__:
        made.__match_args__ = tuple(f.name for f in positional)
    abc.update_abstractmethods(cls)
    return every


def _params() -> Any:
    """`__dataclass_params__` as `dataclass(init=False, repr=False, eq=False)` sets it."""
    if sys.version_info >= (3, 12):  # match_args, kw_only, slots, weakref_slot came in 3.12
        return _DataclassParams(False, False, False, False, False, False, True, False, False, False)
    return _DataclassParams(False, False, False, False, False, False)


def _own_fields(cls: type, annotations: dict[str, Any]) -> list[Field[Any]]:
    """The fields the class's own annotations declare, in their order; `_: KW_ONLY` makes
    those after it keyword-only and is no field."""
    module = sys.modules.get(cls.__module__)
    namespace = vars(module) if module is not None else {}
    kw_only = False
    own: list[Field[Any]] = []
    for name, annotation in annotations.items():
        kind = _kind(name, annotation, namespace)
        if kind is KW_ONLY:
            if kw_only:
                raise TypeError(f"{name!r} is KW_ONLY, but KW_ONLY has already been specified")
            kw_only = True
        else:
            own.append(_field(cls, name, annotation, kind, kw_only))
    return own


def _kind(name: str, annotation: Any, namespace: dict[str, Any]) -> Any:
    """`_FIELD`, `_FIELD_CLASSVAR` or `KW_ONLY`, as dataclass tells them."""
    named: Any = _named(annotation, namespace) if isinstance(annotation, str) else annotation
    if named is typing.ClassVar or (
        type(named) is _GenericAlias and named.__origin__ is typing.ClassVar
    ):
        return _FIELD_CLASSVAR
    if named is KW_ONLY:
        return KW_ONLY
    if named is InitVar or type(named) is InitVar:
        raise TypeError(f"field {name!r}: InitVar is not supported by @frozen and @mutable")
    return _FIELD


def _named(annotation: str, namespace: dict[str, Any]) -> Any:
    """What a string annotation's first name means, as dataclass reads it without evaluating
    the string: a name of the class's module ("ClassVar[int]"), or of typing or dataclasses
    reached through that module's name for them ("typing.ClassVar", "t.ClassVar")."""
    if annotation in _heads:
        module_name, head = _heads[annotation]
    else:
        match = _HEAD.match(annotation)
        module_name, head = (match[1], match[2]) if match else (None, "")
        _heads[annotation] = (module_name, head)
    if not module_name:
        return namespace.get(head)
    module = namespace.get(module_name)
    if module is typing or module is dataclasses:
        return vars(module).get(head)
    return None


def _field(cls: type, name: str, annotation: Any, kind: Any, kw_only: bool) -> Field[Any]:
    """The field of one annotation, as dataclass makes it: the class attribute is its default,
    or its `field(...)`."""
    default = getattr(cls, name, MISSING)
    if isinstance(default, Field):
        f: Any = default
    else:
        if isinstance(default, types.MemberDescriptorType):  # a slot: no default
            default = MISSING
        f = dataclasses.field(default=default)
    f.name = name
    f.type = annotation
    f._field_type = kind
    if kind is _FIELD:
        if f.kw_only is MISSING:
            f.kw_only = kw_only
        if f.default.__class__.__hash__ is None:  # dataclass's sign of a mutable value
            raise ValueError(
                f"mutable default {type(f.default)} for field {name} is not allowed: "
                "use default_factory"
            )
    elif f.default_factory is not MISSING:
        raise TypeError(f"field {name} cannot have a default factory")
    elif f.kw_only is not MISSING:
        raise TypeError(f"field {name} is a ClassVar but specifies kw_only")
    return f


def _check_defaults_first(positional: list[Field[Any]]) -> None:
    """dataclass's error for a required positional argument after one with a default (its
    `__init__` could not be written)."""
    seen_default = False
    for f in positional:
        if f.default is not MISSING or f.default_factory is not MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
