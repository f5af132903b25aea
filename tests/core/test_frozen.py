"""`@frozen` (core/frozen.py) behaves as `@dataclass(frozen=True)` does, and `@mutable` as
`@dataclass`: each check runs on a pair of classes, one made each way, in the shapes the events
have (a keyword-only field of the base, defaults, factories, a field left out of comparison and
repr)."""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Any

import pytest

from mm_tui.core.events import BaseEvent, PermissionRequested, TextDelta, TurnEnded
from mm_tui.core.frozen import frozen, mutable


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


REAL = family(dataclass(frozen=True))
MINE = family(frozen)
REAL_MUTABLE = family(dataclass)
MINE_MUTABLE = family(mutable)


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
@pytest.mark.parametrize(("reals", "mine"), [(REAL, MINE), (REAL_MUTABLE, MINE_MUTABLE)])
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
    for _, Item, Empty in (REAL, MINE):
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
    for _, Item, _ in (REAL, MINE):
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
    for _, Item, _ in (REAL, MINE):
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
    for _, Item, Empty in (REAL_MUTABLE, MINE_MUTABLE):
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
