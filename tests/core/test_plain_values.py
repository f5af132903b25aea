"""Settings of plain values are taken without pydantic (config/plain_values.py), and only where
pydantic would take the same values unchanged: held to pydantic itself over generated mappings."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mm_tui.config.plain_values import plain_instance
from mm_tui.config.settings import AgentRef, McpServer, Settings
from mm_tui.config.validated_dataclass import _adapter  # pyright: ignore[reportPrivateUsage]

KEYS = [
    *(name for name in Settings.model_fields),
    "baseUrl", "maxOutput", "previewLines", "maxTurns", "watchdogTimeout", "contextWindow",
    "todoTool", "sandboxDeny", "sandboxWrite", "commandEnvExclude", "bashTool", "sandboxNetwork",
    "apiKey", "skillsDir", "sessionsDir", "noSuchKey",
]  # fmt: skip

VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=70000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["auto", "off", "strict", "ask", "plan", "mm-dark", "", "5", "1.5", "true"]),
    st.sampled_from([0, 1, 511, 512, 513, 1.0, 0.0, -0.0]),
    st.lists(st.sampled_from(["a", "*KEY", " b , c "]), max_size=3),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.sampled_from(["x", "bash"]), st.just("allow"), max_size=1),
)


def _by_pydantic(cls: type, data: dict[str, Any], **spelling: Any) -> Any:
    try:
        return _adapter(cls).validate_python(data, **spelling)
    except Exception:  # noqa: BLE001 - a refusal: the fast path must not have taken it
        return None


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same types, down into lists (20000 is not 20000.0 here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@settings(max_examples=600, deadline=None)
@given(
    data=st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=4),
    spelling=st.sampled_from(
        [{}, {"by_alias": True, "by_name": False}, {"by_alias": False, "by_name": True}]
    ),
)
def test_what_the_fast_path_takes_pydantic_takes_unchanged(
    data: dict[str, Any], spelling: dict[str, Any]
) -> None:
    made = plain_instance(Settings, data, by_alias=spelling.get("by_alias"),
                          by_name=spelling.get("by_name"))  # fmt: skip
    if made is None:
        return
    judged = _by_pydantic(Settings, data, **spelling)
    assert judged is not None, f"pydantic refuses {data!r} ({spelling}), the fast path took it"
    fast, slow = vars(made), vars(judged)
    assert fast.keys() == slow.keys()
    for key in fast:
        assert _same(fast[key], slow[key]), (key, fast[key], slow[key])


@pytest.mark.parametrize(
    "data",
    [
        {"theme": "mm-dark", "maxOutput": 20000, "sandbox": "auto"},  # the bench's file
        {"model": "qwen", "baseUrl": "http://127.0.0.1:8080/v1", "contextWindow": 8192},
        {"yolo": False, "todoTool": "auto", "sandboxDeny": "a, b", "watchdogTimeout": 30},
        {"sandbox": False, "temperature": 0.2, "sessionsDir": None},
    ],
)
def test_the_keys_people_set_are_taken_without_pydantic(data: dict[str, Any]) -> None:
    """The common files: a test that fails if a change sends them back to pydantic."""
    made = plain_instance(Settings, data, by_alias=True, by_name=False)
    assert made is not None
    assert _same(vars(made), vars(_adapter(Settings).validate_python(data, by_alias=True,
                                                                    by_name=False)))  # fmt: skip


@pytest.mark.parametrize(
    ("cls", "data"),
    [
        (Settings, {"maxOutput": "5"}),  # a text pydantic converts
        (Settings, {"maxOutput": 0}),  # below its bound: pydantic's error
        (Settings, {"maxOutput": True}),  # a bool for an int
        (Settings, {"watchdogTimeout": math.inf}),
        (Settings, {"apiKey": "sk-x"}),  # a secret: SecretStr is pydantic's
        (Settings, {"permissions": {"bash": "allow"}}),  # an after-check
        (Settings, {"lsp": {"servers": []}}),  # a nested class
        (Settings, {"max_output": 5}),  # the attribute's name where only YAML's is allowed
        (Settings, {"maxOutput": 5, "max_output": 6}),  # both spellings
        (Settings, {"themes": "x"}),  # unknown
        (AgentRef, {}),  # a required field missing
        (McpServer, {"command": "a", "url": "http://x"}),  # the class's own check refuses
    ],
)
def test_anything_else_is_left_to_pydantic(cls: type, data: dict[str, Any]) -> None:
    assert plain_instance(cls, data, by_alias=True, by_name=False) is None
