"""The engine stays readable: no module of it over 400 lines, no function over 50 (ruff's C901
holds each to a complexity of 15). Its collaborators own their state; a function that grows past
this is doing the work of another one."""

from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "mm_tui" / "engine"
LONGEST = 50


def test_no_engine_function_is_over_fifty_lines() -> None:
    long = []
    for path in sorted(ENGINE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > LONGEST:
                    long.append(f"{path.name}:{node.lineno} {node.name} ({lines} lines)")
    assert long == []


def test_no_engine_module_is_over_four_hundred_lines() -> None:
    """A module that grows past this holds two collaborators: split it by what each owns."""
    long = [
        f"{path.name} ({count} lines)"
        for path in sorted(ENGINE.glob("*.py"))
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > 400
    ]
    assert long == []
