"""Writing an allow rule the person gave in a permission box into a configuration file.

The file is the person's, comments and order included, so the rule goes in as a line of text
where it belongs (a new `permissions:` section at the end, a tool's block inside it, or a line in
the tool's block); the result is read back and must equal the old settings plus the rule, or
nothing is written. A project's `.mm/config.yaml` is written only when its bytes were trusted
(or gave no key that needs trust): the rule is the person's own answer, so the new bytes are
then trusted too, and nothing that a command wrote into the file before is trusted with it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mm_tui.config.files import HOME_CONFIG, PROJECT_CONFIG
from mm_tui.core.events import RuleToSave
from mm_tui.core.files import write_atomically
from mm_tui.core.paths import user_config_dir

PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


class RuleNotSaved(Exception):
    """Why the rule could not be written: the message the person reads."""


def save_allow_rule(
    rule: RuleToSave,
    *,
    cwd: Path,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[str, str]:
    """Write `rule` where its place says; returns (the file written, "") or ("", why not)."""
    if rule.place == "project":
        path = cwd / PROJECT_CONFIG
        shown = str(PROJECT_CONFIG)
    else:
        path = user_config_dir(home, environ) / HOME_CONFIG.name
        shown = tilde(path, home)
    try:
        if rule.place == "project":
            _save_in_project(path, rule, cwd, home, environ)
        else:
            _write(path, rule)
    except RuleNotSaved as why:
        return "", f"the rule holds for this session only: {why}"
    except OSError as exc:
        return "", f"the rule holds for this session only: {shown}: {exc.strerror or exc}"
    return shown, ""


def tilde(path: Path, home: Path | None) -> str:
    """`~/.config/mm/config.yaml` for a file in the home folder, else the path."""
    home = Path.home() if home is None else home
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


def _save_in_project(
    path: Path, rule: RuleToSave, cwd: Path, home: Path | None, environ: Mapping[str, str] | None
) -> None:
    from mm_tui.config.project import read_project
    from mm_tui.core.trust import digest, record_path, remember

    try:
        before = read_project(cwd, home=home, environ=environ)
    except Exception as exc:  # noqa: BLE001 - a broken file: the person mends it first
        raise RuleNotSaved(f"{PROJECT_CONFIG} does not read ({exc})") from None
    if before is not None and before.untrusted and not before.trusted:
        raise RuleNotSaved(
            f"{PROJECT_CONFIG} holds keys you have not trusted; run mm here to review it"
        )
    written = _write(path, rule)
    # the bytes mm wrote, not the file read again: a command running meanwhile could have
    # changed it, and its bytes are not the person's
    warning = remember(record_path(home, environ), os.path.realpath(path), digest(written))
    if warning:
        raise RuleNotSaved(warning)


def _write(path: Path, rule: RuleToSave) -> bytes:
    import yaml

    old = path.read_text(encoding="utf-8") if path.exists() else ""
    data = yaml.safe_load(old) if old.strip() else {}
    if not isinstance(data, dict):
        raise RuleNotSaved(f"{path} does not hold settings")
    new = with_rule(old, data, rule.tool, rule.pattern)
    if new is None or yaml.safe_load(new) != expected(data, rule.tool, rule.pattern):
        raise RuleNotSaved(
            f"{path} is not laid out as mm can add to; add it by hand under permissions: "
            f"{rule.tool}: {json.dumps(rule.pattern)}: allow"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    data = new.encode("utf-8")
    write_atomically(path, data, mode=mode)
    return data


def expected(data: dict[str, Any], tool: str, pattern: str) -> dict[str, Any]:
    """The settings the file must read as once the rule is in."""
    out = dict(data)
    section = dict(out.get("permissions") or {})
    given = section.get(tool)
    patterns = {"*": given} if isinstance(given, str) else dict(given or {})
    patterns[pattern] = "allow"
    section[tool] = patterns
    out["permissions"] = section
    return out


def with_rule(old: str, data: dict[str, Any], tool: str, pattern: str) -> str | None:
    """`old` with the rule's line added, or None when its layout is not one handled here."""
    key = tool if PLAIN_KEY.fullmatch(tool) else json.dumps(tool)
    entry = f"{json.dumps(pattern)}: allow"
    text = old if not old or old.endswith("\n") else old + "\n"
    lines = text.splitlines(keepends=True)
    start = _line_of(lines, r"permissions:\s*(#.*)?\n?", 0, 0)
    if "permissions" not in data:
        return f"{text}permissions:\n  {key}:\n    {entry}\n"
    if start is None:
        return None  # a flow mapping, or a key spelled otherwise
    end = next((i for i in range(start + 1, len(lines)) if _top_level(lines[i])), len(lines))
    indent = _child_indent(lines, start + 1, end, 0) or 2
    tool_line = _line_of(lines, re.escape(key) + r":\s*(#.*)?\n?", start + 1, indent, end)
    if tool_line is None:
        added = f"{' ' * indent}{key}:\n{' ' * (indent * 2)}{entry}\n"
        return "".join((*lines[: start + 1], added, *lines[start + 1 :]))
    inner_end = next((i for i in range(tool_line + 1, end) if _indent_of(lines[i]) <= indent), end)
    inner = _child_indent(lines, tool_line + 1, inner_end, indent) or indent * 2
    added = f"{' ' * inner}{entry}\n"
    return "".join((*lines[: tool_line + 1], added, *lines[tool_line + 1 :]))


def _line_of(lines: list[str], pattern: str, start: int, indent: int, end: int = -1) -> int | None:
    stop = len(lines) if end < 0 else end
    regex = re.compile(" " * indent + pattern)
    return next((i for i in range(start, stop) if regex.fullmatch(lines[i])), None)


def _top_level(line: str) -> bool:
    return bool(line.strip()) and not line.startswith((" ", "\t", "#"))


def _indent_of(line: str) -> int:
    if not line.strip() or line.lstrip().startswith("#"):
        return 1 << 30  # blank and comment lines belong to the block around them
    return len(line) - len(line.lstrip(" "))


def _child_indent(lines: list[str], start: int, end: int, parent: int) -> int | None:
    for line in lines[start:end]:
        width = _indent_of(line)
        if width < 1 << 30 and width > parent:
            return width
    return None
