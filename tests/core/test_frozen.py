"""`@frozen` (core/frozen.py) behaves as `@dataclass(frozen=True)` does, and `@mutable` as
`@dataclass`: each check runs on a pair of classes, one made each way, in the shapes the events
have (a keyword-only field of the base, defaults, factories, a field left out of comparison and
repr)."""

from __future__ import annotations

import copy
import dataclasses
import typing
import typing as t
from collections.abc import Callable
from dataclasses import KW_ONLY, FrozenInstanceError, InitVar, dataclass, field
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mm_tui.core.events import BaseEvent, PermissionRequested, TextDelta, TurnEnded
from mm_tui.core.frozen import described, frozen, mutable


def family(decorate: Any) -> tuple[type, type, type]:
    @decorate
    class Base:
        agent: str | None = field(default=None, kw_only=True)

    @decorate
    class Item(Base):
        text: str
        count: int = 0
        tags: list[str] | tuple[str, ...] = field(default_factory=list)
        hidden: object = field(default=None, compare=False, repr=False)

    @decorate
    class Empty(Base):
        pass

    return Base, Item, Empty


def documented(decorate: Any) -> Any:
    """`decorate`, given a documented class: `frozen` and `mutable` make such a class at its
    first use (core/frozen.py, `_Waiting`), an undocumented one at once."""

    def made(cls: type) -> type:
        cls.__doc__ = f"{cls.__name__}, documented."
        return decorate(cls)

    return made


REAL = family(dataclass(frozen=True))
MINE = family(frozen)
WAITING = family(documented(frozen))
REAL_MUTABLE = family(dataclass)
MINE_MUTABLE = family(mutable)
WAITING_MUTABLE = family(documented(mutable))


def outcome(make: Any) -> Any:
    try:
        return ("ok", make())
    except Exception as exc:  # noqa: BLE001 - the error is what is compared
        return (type(exc).__name__, str(exc))


CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    (("t",), {}),
    (("t", 2), {"agent": "a"}),
    ((), {"text": "t", "count": 3, "tags": ["x"], "hidden": 1}),
    (("t", 2, ["y"], 5), {}),
    ((), {}),
    (("t", 1, [], None, "extra"), {}),
    (("t",), {"text": "again"}),
    (("t",), {"nope": 1}),
    (("t", "a"), {"agent": None}),
]


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
@pytest.mark.parametrize(
    ("reals", "mine"),
    [(REAL, MINE), (REAL_MUTABLE, MINE_MUTABLE), (REAL, WAITING), (REAL_MUTABLE, WAITING_MUTABLE)],
)
def test_construction_repr_and_errors(
    args: tuple[Any, ...], kwargs: dict[str, Any], reals: Any, mine: Any
) -> None:
    real = outcome(lambda: reals[1](*args, **kwargs))
    mine = outcome(lambda: mine[1](*args, **kwargs))
    if real[0] == "ok":
        assert mine[0] == "ok"
        assert repr(mine[1]).replace("family.<locals>.", "") == repr(real[1]).replace(
            "family.<locals>.", ""
        )
        assert dataclasses.asdict(mine[1]) == dataclasses.asdict(real[1])
    else:
        assert mine == real


def test_equality_hash_and_what_is_compared() -> None:
    for _, Item, Empty in (REAL, MINE, WAITING):
        a, b = Item("t", 1, (), hidden=1), Item("t", 1, (), hidden=2)
        assert a == b and hash(a) == hash(b)  # hidden is not compared
        assert hash(a) == hash((None, "t", 1, ()))
        assert a != Item("t", 2, ()) and a != Item("t", 1, (), agent="x")
        assert (a == ("t", 1)) is False and a.__eq__(("t", 1)) is NotImplemented
        assert Empty() == Empty() and hash(Empty()) == hash((None,))
        assert {Empty(agent="a"), Empty(agent="a")} == {Empty(agent="a")}
        with pytest.raises(TypeError, match="unhashable"):
            hash(Item("t", tags=["x"]))


def test_it_is_frozen_as_a_dataclass_is() -> None:
    for _, Item, _ in (REAL, MINE, WAITING):
        item = Item("t")
        for name in ("text", "other"):
            with pytest.raises(FrozenInstanceError, match=f"cannot assign to field '{name}'"):
                setattr(item, name, "u")
        with pytest.raises(FrozenInstanceError, match="cannot delete field 'text'"):
            del item.text

        class Open(Item):  # a plain subclass may hold other attributes, not change the fields
            pass

        loose = Open("t")
        loose.note = 1  # pyright: ignore[reportAttributeAccessIssue]
        with pytest.raises(FrozenInstanceError):
            loose.text = "u"


def test_the_dataclass_functions_work() -> None:
    for _, Item, _ in (REAL, MINE, WAITING):
        item = Item("t", 1, agent="a")
        assert [f.name for f in dataclasses.fields(item)] == [
            "agent",
            "text",
            "count",
            "tags",
            "hidden",
        ]
        assert Item.__match_args__ == ("text", "count", "tags", "hidden")
        changed = dataclasses.replace(item, count=5)
        assert (changed.text, changed.count, changed.agent) == ("t", 5, "a")
        assert copy.copy(item) == item and copy.deepcopy(item) == item
        assert Item("t").tags is not Item("t").tags  # a fresh list each time


def test_post_init_runs() -> None:
    seen: list[Any] = []

    @frozen
    class Checked:
        value: int

        def __post_init__(self) -> None:
            seen.append(self.value)

    Checked(3)
    assert seen == [3]


def test_the_events_are_made_so() -> None:
    delta = TextDelta(text="hi", agent="helper")
    assert repr(delta) == "TextDelta(agent='helper', text='hi')"
    assert dataclasses.replace(delta, text="ho") == TextDelta("ho", agent="helper")
    assert isinstance(delta, BaseEvent) and dataclasses.is_dataclass(TurnEnded)
    with pytest.raises(FrozenInstanceError):
        delta.text = "x"  # pyright: ignore[reportAttributeAccessIssue]
    # every event is plain data: a front end may keep it, compare it, send it on
    asked = PermissionRequested(call_id="c1", tool="bash", title="bash  ls", details="ls")
    assert asked == dataclasses.replace(asked) and hash(asked) == hash(dataclasses.replace(asked))


def test_mutable_compares_as_a_dataclass_and_has_no_hash() -> None:
    for _, Item, Empty in (REAL_MUTABLE, MINE_MUTABLE, WAITING_MUTABLE):
        a, b = Item("t", 1, (), hidden=1), Item("t", 1, (), hidden=2)
        assert a == b and a != Item("t", 2, ()) and a != Item("t", 1, (), agent="x")
        assert a.__eq__(("t", 1)) is NotImplemented and Empty() == Empty()
        assert Item.__hash__ is None
        with pytest.raises(TypeError, match="unhashable"):
            hash(a)
        a.text = "u"  # its fields may be set, and others added
        a.note = 1  # pyright: ignore[reportAttributeAccessIssue]
        assert a.text == "u" and a != b
        del a.note  # pyright: ignore[reportAttributeAccessIssue]
        assert [f.name for f in dataclasses.fields(a)][:2] == ["agent", "text"]
        assert dataclasses.replace(a, count=5).count == 5 and copy.deepcopy(a) == a
        assert Item("t").tags is not Item("t").tags


def test_mutable_keeps_a_hash_and_a_setattr_of_the_class_own() -> None:
    made: list[str] = []
    for decorate in (dataclass, mutable):

        @decorate
        class Keyed:
            key: str

            def __hash__(self) -> int:
                return hash(self.key)

            def __setattr__(self, name: str, value: Any) -> None:
                made.append(name)
                super().__setattr__(name, value)

        assert hash(Keyed("k")) == hash("k") and Keyed("k") == Keyed("k")
    assert made == ["key"] * 6  # each __init__ set its field through it


# The fields are collected as dataclass collects them (core/frozen_fields.py): what a class made
# each way holds is compared, for sample classes and for classes drawn by hypothesis.

ABSENT = "<absent>"


def samples(decorate: Any) -> dict[str, type]:
    @decorate
    class Base:
        kind: ClassVar[str] = "base"
        limit: typing.ClassVar[int] = 3
        agent: str | None = field(default=None, kw_only=True)
        note = "not a field"  # not annotated: a plain class attribute

    @decorate
    class Child(Base):
        text: str
        count: int = 0
        tags: list[str] = field(default_factory=list)
        hidden: object = field(default=None, compare=False, repr=False, metadata={"m": 1})
        later: int = field(init=False, default=7)
        unset: int = field(init=False)
        _: KW_ONLY
        flag: bool = False
        needed: str = field(hash=False)
        placed: int = field(default=1, kw_only=False)

        def __post_init__(self) -> None:
            object.__setattr__(self, "unset", self.count * 2)

    @decorate
    class Again(Child):
        other: t.ClassVar[str] = "again"
        count: int = 5  # a base's field given a new default keeps its place
        text: str = "t"

    @decorate
    class Matched:
        __match_args__ = ("x",)
        x: int
        y: int = 0

    return {"Base": Base, "Child": Child, "Again": Again, "Matched": Matched}


def shape(cls: type) -> dict[str, Any]:
    def one(f: dataclasses.Field[Any]) -> tuple[Any, ...]:
        return (
            *(f.name, f.type, f.default, f.default_factory, f.init, f.repr, f.hash),
            *(f.compare, dict(f.metadata), f.kw_only, f._field_type),  # pyright: ignore[reportAttributeAccessIssue]
        )

    every: dict[str, dataclasses.Field[Any]] = cls.__dataclass_fields__  # pyright: ignore[reportAttributeAccessIssue]
    return {
        "fields": [one(f) for f in dataclasses.fields(cls)],
        "all": {name: one(f) for name, f in every.items()},
        "match_args": cls.__dict__.get("__match_args__", ABSENT),
        "attributes": {n: cls.__dict__.get(n, ABSENT) for n in [*every, "note", "_"]},
        "is_dataclass": dataclasses.is_dataclass(cls),
    }


PAIRS = [  # dataclass's, and the stand-in: made at once, and at first use
    (dataclass(frozen=True), frozen),
    (dataclass, mutable),
    (dataclass(frozen=True), documented(frozen)),
    (dataclass, documented(mutable)),
]


@pytest.mark.parametrize(("real", "mine"), PAIRS)
@pytest.mark.parametrize("name", ["Base", "Child", "Again", "Matched"])
def test_the_fields_are_dataclass_s(real: Any, mine: Any, name: str) -> None:
    assert shape(samples(mine)[name]) == shape(samples(real)[name])


@pytest.mark.parametrize(("real", "mine"), PAIRS)
def test_replace_asdict_and_is_dataclass_as_on_a_dataclass(real: Any, mine: Any) -> None:
    def used(classes: dict[str, type]) -> Any:
        item = classes["Again"]("x", 2, ["a"], needed="n", agent="a")
        changed = dataclasses.replace(item, count=3, needed="m")
        return (
            dataclasses.asdict(item),
            dataclasses.asdict(changed),
            dataclasses.is_dataclass(item),
            outcome(lambda: dataclasses.replace(item, later=1)),  # not an argument of __init__
            (item.unset, changed.unset),  # init=False without a default: __post_init__'s
            hasattr(classes["Child"], "unset"),
            (repr(item), item == changed, item == dataclasses.replace(changed, count=2)),
            outcome(lambda: classes["Again"](needed="n", kind="k")),  # a ClassVar: no argument
        )

    assert used(samples(mine)) == used(samples(real))


def test_the_params_are_those_of_a_dataclass_without_methods() -> None:
    plain = dataclass(init=False, repr=False, eq=False)(type("Plain", (), {}))
    for made in (*samples(frozen).values(), *samples(mutable).values()):
        assert repr(made.__dataclass_params__) == repr(plain.__dataclass_params__)  # pyright: ignore[reportAttributeAccessIssue]


def _mutable_default(decorate: Any) -> type:
    class Bad:
        tags: list[str] = []

    return decorate(Bad)


def _required_after_default(decorate: Any) -> type:
    class Bad:
        a: int = 0
        b: int

    return decorate(Bad)


def _required_after_an_inherited_default(decorate: Any) -> type:
    @decorate
    class Base:
        a: int = 0

    class Bad(Base):
        b: int = field(init=False)  # not an argument: no error
        c: int

    return decorate(Bad)


def _kw_only_twice(decorate: Any) -> type:
    class Bad:
        _: KW_ONLY
        a: int
        __: KW_ONLY

    return decorate(Bad)


def _field_not_annotated(decorate: Any) -> type:
    class Bad:
        a = field(default=1)

    return decorate(Bad)


def _classvar_with_a_factory(decorate: Any) -> type:
    class Bad:
        a: ClassVar[list[int]] = field(default_factory=list)

    return decorate(Bad)


@pytest.mark.parametrize(
    "make",
    [
        _mutable_default,
        _required_after_default,
        _required_after_an_inherited_default,
        _kw_only_twice,
        _field_not_annotated,
        _classvar_with_a_factory,
    ],
)
@pytest.mark.parametrize(("real", "mine"), PAIRS)
def test_dataclass_s_errors(make: Any, real: Any, mine: Any) -> None:
    """dataclass refuses the class as it is made; `frozen` and `mutable` at once, or at its
    first use for a documented class, each time it is used."""
    expected = outcome(lambda: make(real))
    assert expected[0] in ("ValueError", "TypeError")
    assert outcome(lambda: dataclasses.fields(make(mine))) == expected
    waiting = make(documented(mine))
    for _ in range(2):
        assert outcome(lambda: waiting()) == expected  # noqa: B023 - used at once
        assert outcome(lambda: dataclasses.fields(waiting)) == expected  # noqa: B023


def test_what_is_not_supported_is_refused() -> None:
    class Later:
        a: InitVar[int]

    with pytest.raises(TypeError, match="InitVar is not supported"):
        frozen(Later)

    @dataclass(frozen=True)
    class Real:
        a: int

    class Below(Real):
        b: int = 0

    with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen one"):
        frozen(Below)  # its setattr would be a frozen dataclass's, that this does not make


# Classes drawn from the shapes a field may take: each spec is made the same way twice, once by
# dataclass and once here, and what the two hold (or the error) must be the same.

NOTHING = object()
FIELD_HOW: dict[str, Callable[[], Any]] = {
    "none": lambda: NOTHING,
    "plain": lambda: 1,
    "mutable": lambda: [],
    "default": lambda: field(default=2),
    "factory": lambda: field(default_factory=list),
    "init_false": lambda: field(init=False),
    "init_false_default": lambda: field(init=False, default=3),
    "kw_only": lambda: field(default=4, kw_only=True),
    "kw_only_required": lambda: field(kw_only=True),
    "positional": lambda: field(kw_only=False),
    "options": lambda: field(default=5, compare=False, repr=False, hash=True, metadata={"m": 1}),
}
CLASSVARS = ["ClassVar[int]", "typing.ClassVar[int]", "t.ClassVar[str]"]
MARKERS = ["KW_ONLY", "dataclasses.KW_ONLY"]
PLAIN_HOW = ["none", "plain", "default", "factory", "init_false_default", "options"]

field_specs = st.lists(  # mostly fields, that most classes drawn can be made
    st.tuples(
        st.sampled_from(["int", "str | None"] * 6 + CLASSVARS + MARKERS),
        st.sampled_from(PLAIN_HOW * 3 + sorted(set(FIELD_HOW) - set(PLAIN_HOW))),
    ),
    max_size=6,
)


def drawn(spec: list[tuple[str, str]], decorate: Any, base: type | None = None) -> type:
    namespace: dict[str, Any] = {"__module__": __name__, "__doc__": "drawn", "__annotations__": {}}
    for i, (annotation, how) in enumerate(spec):
        name = f"_{i}" if annotation in MARKERS else f"f{i % 4}"  # a name may come again
        namespace["__annotations__"][name] = annotation
        value = FIELD_HOW[how]()
        if value is not NOTHING and annotation not in MARKERS:
            namespace[name] = value
    return decorate(type("Drawn", (base,) if base else (), namespace))


@settings(max_examples=300)
@given(base=field_specs, child=field_specs, mutable_=st.booleans())
def test_drawn_classes_have_dataclass_s_fields(
    base: list[tuple[str, str]], child: list[tuple[str, str]], mutable_: bool
) -> None:
    real, mine = (dataclass, mutable) if mutable_ else (dataclass(frozen=True), frozen)

    def made(decorate: Any) -> Any:
        return shape(drawn(child, decorate, drawn(base, decorate)))

    assert outcome(lambda: made(mine)) == outcome(lambda: made(real))


def _two() -> list[int]:
    return [2]


def _described_pair() -> tuple[type, type]:
    """The same class with an `__init__` and an equality of its own, made by `described` and
    by `dataclass(init=False, eq=False)`."""

    def make(decorate: Callable[[type], type]) -> type:
        class Own:
            a: int = 1
            b: list[int] = field(default_factory=_two, repr=False)
            c: str = field(default="x", kw_only=True)
            kind: ClassVar[str] = "own"

            def __init__(self, **data: Any) -> None:
                self.a, self.b, self.c = data.get("a", 1), data.get("b", [2]), data.get("c", "x")

            def __eq__(self, other: object) -> bool:
                return other is self

        return decorate(Own)

    return make(described), make(dataclass(init=False, eq=False))


def test_described_is_a_dataclass_with_its_own_init_and_equality() -> None:
    """`described` (the settings' classes): dataclass's fields and repr, the class's own
    `__init__` and equality kept."""
    ours, theirs = _described_pair()
    assert shape(ours) == shape(theirs)
    assert repr(ours(a=5)) == repr(theirs(a=5)).replace(theirs.__qualname__, ours.__qualname__)
    assert repr(ours(a=5)).endswith("Own(a=5, c='x')")
    one = ours()
    assert one == one and one != ours()
    assert ours.__hash__ is None and theirs.__hash__ is None  # as Python leaves an own __eq__
    assert ours.__match_args__ == theirs.__match_args__ == ("a", "b")


def test_described_keeps_a_repr_of_the_class_own() -> None:
    @described
    class Shown:
        a: int = 1

        def __repr__(self) -> str:
            return "mine"

    assert repr(Shown()) == "mine"


# A documented class is made at its first use (`_Waiting`): whichever use comes first, what it
# finds is the class dataclass would have made.


def _one_waiting(decorate: Any) -> tuple[type, type]:
    @decorate
    class Base:
        """Documented: made at its first use."""

        agent: str | None = field(default=None, kw_only=True)

    @decorate
    class Point(Base):
        """Documented too."""

        x: int
        tags: list[str] = field(default_factory=list)

    return Base, Point


FIRST_USES: dict[str, Callable[[type, Any], Any]] = {  # (the class, its decorator)
    "an instance": lambda c, _: repr(c(1, agent="a")),
    "fields()": lambda c, _: [f.name for f in dataclasses.fields(c)],
    "is_dataclass()": lambda c, _: dataclasses.is_dataclass(c),
    "match": lambda c, _: _matched(c(2, ["t"]), c),
    "__match_args__": lambda c, _: c.__match_args__,
    "the class's __init__": lambda c, _: c.__init__.__qualname__,
    "equality and hash": lambda c, _: (
        c(1) == c(1),
        c.__hash__ is None or hash(c(1)) == hash(c(1)),
    ),
    "a subclass": lambda c, d: [f.name for f in dataclasses.fields(d(type("S", (c,), {})))],
}


def _matched(case: Any, cls: type) -> tuple[Any, Any]:
    match case:
        case cls(x, tags):  # pyright: ignore[reportGeneralTypeIssues]
            return x, tags
    return None, None


@pytest.mark.parametrize("use", list(FIRST_USES))
@pytest.mark.parametrize("mine", [frozen, mutable])
def test_a_waiting_class_is_whole_whichever_use_comes_first(use: str, mine: Any) -> None:
    real = dataclass(frozen=True) if mine is frozen else dataclass
    base, point = _one_waiting(documented(mine))
    assert type(point.__dict__["__init__"]).__name__ == "_Unmade"  # it waits
    got = outcome(lambda: FIRST_USES[use](point, documented(mine)))
    expected = outcome(lambda: FIRST_USES[use](_one_waiting(real)[1], real))
    assert str(got).replace("_one_waiting.<locals>.", "") == str(expected).replace(
        "_one_waiting.<locals>.", ""
    )
    assert shape(point) == shape(_one_waiting(real)[1]) and shape(base) == shape(
        _one_waiting(real)[0]
    )
    assert not any(type(v).__name__ == "_Unmade" for v in vars(point).values())


def test_threads_that_first_use_a_class_together_find_it_whole() -> None:
    """The first use makes the class under a lock: two threads that read it together (the
    loop, and a thread loading modules once the window is ready) both find it whole. Made
    twice, a field's default factory would be lost (the first making takes it off the class)
    and the class would ask for that field."""
    import sys
    import threading

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # hand the GIL over as often as it can be
    failures: list[str] = []
    try:
        for _ in range(200):
            _, point = _one_waiting(documented(frozen))
            start = threading.Barrier(3)

            def use(point: type = point, start: threading.Barrier = start) -> None:
                start.wait()
                try:
                    assert point(1).tags == []
                except Exception as exc:  # noqa: BLE001 - counted below
                    failures.append(repr(exc))

            threads = [threading.Thread(target=use) for _ in range(3)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        sys.setswitchinterval(switch)
    assert failures == []


def test_every_class_of_mm_is_made_whole_at_its_first_use() -> None:
    """mm's documented classes wait to be made: a class dataclass would refuse would only say
    so at its first use. Each of mm's dataclasses (waiting or made, whatever tests ran before)
    is used here and found whole."""
    import importlib
    import pkgutil

    import mm_tui

    checked = set()
    for info in pkgutil.walk_packages(mm_tui.__path__, "mm_tui."):
        module = importlib.import_module(info.name)
        for value in list(vars(module).values()):
            # its own __dict__: a waiting class's holds an _Unmade there, read without using it
            if isinstance(value, type) and "__dataclass_fields__" in value.__dict__:
                assert dataclasses.fields(value) is not None
                assert not any(type(v).__name__ == "_Unmade" for v in vars(value).values())
                checked.add(value)
    assert len(checked) >= 100


def test_importing_the_events_makes_none_of_them() -> None:
    """What waiting saves: the engine's events, imported on the way to ready and used only
    in a turn, are not made as they are imported (a fresh process)."""
    import subprocess
    import sys

    code = (
        "import mm_tui.core.events as e\n"
        "print(sum(type(c.__dict__.get('__init__')).__name__ == '_Unmade'"
        " for c in vars(e).values() if isinstance(c, type)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) >= 15
