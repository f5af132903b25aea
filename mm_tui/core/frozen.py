"""`@frozen` and `@mutable`: `@dataclass(frozen=True)` and `@dataclass` without compiling code
as the class is made.

A stand-in for dataclass's code generation, which the event classes would pay for on the way to
the first frame, and the engine's and the tools' classes on the way to ready (half a
millisecond a class): see docs/performance.md. `dataclass` writes the source of six methods for
each frozen class (`__init__`, `__repr__`, `__eq__`, `__hash__`, `__setattr__`, `__delattr__`)
and compiles each one; `frozen` collects the fields as `dataclass` does, without calling it
(frozen_fields.py: `fields()`, `replace()`, `asdict()`, `__match_args__`, pydantic work as on a
dataclass), and gives the class those six methods as closures over its fields, made without
compiling anything. They behave as the generated ones do (the same repr, equality, hash, frozen
errors; keyword-only fields and `field(compare=False, repr=False, init=False)` honoured;
`__post_init__` called); tests/core/test_frozen.py holds them to it. Creating an instance costs
a few microseconds more, which the events, made at most hundreds of times a second, do not
feel. `InitVar` is refused and `slots` not supported (nothing here uses them).

`mutable` does the same for a plain `@dataclass`: `__init__`, `__repr__` and `__eq__`, fields
that may be set, and no hash (as dataclass, unless the class has its own).

A documented class is made at its first use, not as it is defined (`_Waiting`): most of mm's are
not used before a window is ready.
"""

from __future__ import annotations

import dataclasses
import reprlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import MISSING, FrozenInstanceError
from typing import Any, TypeVar, cast, dataclass_transform

from mm_tui.core.frozen_fields import dataclass_fields

T = TypeVar("T", bound=type)


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: T) -> T:
    """Make `cls` a frozen dataclass, as `@dataclass(frozen=True)` does."""
    return _made(cls, frozen=True)


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def mutable(cls: T) -> T:
    """Make `cls` a dataclass, as `@dataclass` does."""
    return _made(cls, frozen=False)


def described(cls: T) -> T:  # no dataclass_transform: checkers then read the class's __init__
    """`@dataclass(init=False, eq=False)`, the fields and a repr of them, without compiling the
    repr: for classes with an `__init__` and an equality of their own (the settings, which
    validate in theirs). A class's own `__repr__` is kept, as dataclass keeps it."""
    every = dataclass_fields(cls)
    if "__repr__" not in cls.__dict__:
        method = _repr(tuple(f.name for f in every if f.repr))
        method.__qualname__ = f"{cls.__qualname__}.__repr__"
        type.__setattr__(cls, "__repr__", method)
    return cls


def _repr(shown: tuple[str, ...]) -> Callable[[Any], str]:
    """dataclass's `__repr__` of the fields `shown`, as a closure."""

    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:  # noqa: N807
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{self.__class__.__qualname__}({inner})"

    return __repr__


WAITING = (
    "__init__",
    "__repr__",
    "__eq__",
    "__hash__",
    "__match_args__",
    "__dataclass_fields__",
    "__dataclass_params__",
)
"""What a class of `frozen` or `mutable` is given once first used: an instance is made through
`__init__`; dataclass's functions, a subclass's own making and pydantic read
`__dataclass_fields__`; `match` reads `__match_args__`."""

_making = threading.RLock()


class _Waiting:
    """A class of `frozen` or `mutable` whose fields and methods are made at its first use.

    Making them costs about 25 µs a class, and of the ninety such classes imported on the way
    to a ready window, ten make an instance before it is ready (docs/performance.md). Until
    then each of `WAITING` the class lacks is an `_Unmade`, which makes the class whole when
    read, then gives what was read. Making it replaces each of them with the real one (never
    removing one first: a thread that reads it meanwhile waits for the lock instead of finding
    `object`'s). A class dataclass would refuse is refused at its first use; a test makes each
    of mm's (tests/core/test_frozen.py)."""

    __slots__ = ("cls", "done", "frozen", "refused")

    def __init__(self, cls: type, frozen: bool) -> None:
        self.cls = cls
        self.frozen = frozen
        self.done = False
        self.refused: Exception | None = None  # dataclass's error, given at every use

    def make(self) -> None:
        with _making:  # once, whichever thread reads first; a base's making may come inside
            if self.done:
                return
            if self.refused is not None:
                raise self.refused.with_traceback(None)
            cls = self.cls
            own = {k: v for k, v in cls.__dict__.items() if type(v) is not _Unmade}
            unmade = [name for name in WAITING if name not in own]
            if "__match_args__" in unmade:  # dataclass_fields sets it only when absent
                type.__delattr__(cls, "__match_args__")
            try:
                _made_now(cls, frozen=self.frozen, own=own)
            except Exception as exc:
                self.refused = exc
                for name in unmade:
                    type.__setattr__(cls, name, _Unmade(self, name))
                raise
            self.done = True


class _Unmade:
    """One of `WAITING` on a class that waits (`_Waiting`)."""

    __slots__ = ("name", "waiting")

    def __init__(self, waiting: _Waiting, name: str) -> None:
        self.waiting = waiting
        self.name = name

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        self.waiting.make()
        if instance is not None:
            return getattr(instance, self.name)
        return getattr(owner if owner is not None else self.waiting.cls, self.name)


def _made(cls: T, *, frozen: bool) -> T:
    own = cls.__dict__
    if not own.get("__doc__") or "__init__" in own or getattr(cls, "__abstractmethods__", None):
        # made at once: a docstring names the fields; an __init__ of its own would not make
        # it; an abstract method that one made here implements must be known before __new__
        return _made_now(cls, frozen=frozen, own=own)
    waiting = _Waiting(cls, frozen)
    for name in WAITING:
        if name not in own:  # a method of the class's own is kept, as dataclass keeps it
            type.__setattr__(cls, name, _Unmade(waiting, name))
    return cls


def _made_now(cls: T, *, frozen: bool, own: Mapping[str, Any]) -> T:
    """Make `cls` a dataclass now. `own`: what its body defined (without `_Unmade`s)."""
    # The fields are collected as dataclass does (frozen_fields.py), which is not told `frozen`
    # either: this module makes a frozen class's __setattr__ and __delattr__ (every class of a
    # frozen hierarchy must then come from here, as a frozen dataclass's bases must all be
    # frozen). A class without a docstring gets one naming its fields: dataclass would make it
    # of inspect.signature, which parses object's text signature, 2 to 5 ms the first time, on
    # the way to ready (docs/performance.md).
    undocumented = not cls.__dict__.get("__doc__")
    # as dataclass tells a hash of the class's own (Python sets a None one beside an __eq__)
    own_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    every = dataclass_fields(cls)
    if undocumented:
        cls.__doc__ = f"{cls.__name__}({', '.join(f.name for f in every if f.init)})"
    names = frozenset(f.name for f in every)
    positional = [f for f in every if f.init and not f.kw_only]
    keyword = {f.name: f for f in every if f.init and f.kw_only}
    by_name = {f.name: f for f in every if f.init}
    not_init = [f for f in every if not f.init]
    compared = tuple(f.name for f in every if f.compare)
    hashed = tuple(f.name for f in every if (f.compare if f.hash is None else f.hash))
    shown = tuple(f.name for f in every if f.repr)
    post_init = getattr(cls, "__post_init__", None) is not None
    qualname = cls.__qualname__
    made = cast(type, cls)
    # For the instance being made only, as dataclass's own __init__ sets a frozen class's
    # fields: nothing sets a field of an instance once made. A mutable class's are set as
    # dataclass's __init__ sets them, through the class's own __setattr__ if it has one.
    setattr_ = object.__setattr__ if frozen else setattr

    required = [f for f in positional if f.default is MISSING and f.default_factory is MISSING]
    least = 1 + len(required)  # self counts
    most = 1 + len(positional)
    takes = f"from {least} to {most}" if least < most else str(most)
    takes += " positional argument" + ("s" if most > 1 else "")

    def default(f: dataclasses.Field[Any]) -> Any:
        if f.default is not MISSING:
            return f.default
        if f.default_factory is not MISSING:
            return f.default_factory()
        return MISSING

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        if len(args) > len(positional):
            raise TypeError(f"{qualname}.__init__() takes {takes} but {len(args) + 1} were given")
        missing: list[str] = []
        for f, value in zip(positional, args, strict=False):
            if f.name in kwargs:
                raise TypeError(
                    f"{qualname}.__init__() got multiple values for argument {f.name!r}"
                )
            setattr_(self, f.name, value)
        for name in kwargs:
            if name not in by_name:
                raise TypeError(
                    f"{qualname}.__init__() got an unexpected keyword argument {name!r}"
                )
        for f in positional[len(args) :]:
            value = kwargs[f.name] if f.name in kwargs else default(f)
            if value is MISSING:
                missing.append(f.name)
            setattr_(self, f.name, value)
        missing_kw: list[str] = []
        for f in keyword.values():
            value = kwargs[f.name] if f.name in kwargs else default(f)
            if value is MISSING:
                missing_kw.append(f.name)
            setattr_(self, f.name, value)
        for f in not_init:
            value = default(f)
            if value is not MISSING:
                setattr_(self, f.name, value)
        for found, kind in ((missing, "positional"), (missing_kw, "keyword-only")):
            if found:
                listed = ", ".join(repr(n) for n in found)
                s = "s" if len(found) > 1 else ""
                raise TypeError(
                    f"{qualname}.__init__() missing {len(found)} required {kind} argument{s}: "
                    f"{listed}"
                )
        if post_init:
            self.__post_init__()

    __repr__ = _repr(shown)

    def __eq__(self: Any, other: object) -> bool:  # noqa: N807
        if other.__class__ is self.__class__:
            return tuple(getattr(self, n) for n in compared) == tuple(
                getattr(other, n) for n in compared
            )
        return NotImplemented

    def __hash__(self: Any) -> int:  # noqa: N807
        return hash(tuple(getattr(self, n) for n in hashed))

    def __setattr__(self: Any, name: str, value: Any) -> None:  # noqa: N807
        if type(self) is made or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(made, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:  # noqa: N807
        if type(self) is made or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(made, self).__delattr__(name)

    methods: dict[str, Callable[..., Any]] = {
        "__init__": __init__,
        "__repr__": __repr__,
        "__eq__": __eq__,
    }
    if frozen:
        methods.update(__hash__=__hash__, __setattr__=__setattr__, __delattr__=__delattr__)
    elif not own_hash:
        type.__setattr__(cls, "__hash__", None)  # as dataclass: equal by value, so no hash
    for name, method in methods.items():
        if name in own:  # as dataclass, a method of the class's own is kept (repr...)
            if name in ("__setattr__", "__delattr__"):
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
            continue
        method.__qualname__ = f"{qualname}.{name}"
        type.__setattr__(cls, name, method)
    return cls
