"""The person's standing rules of what runs: `permissions` in the configuration.

    permissions:
      read_file: allow              # a tool's every call
      fetch_content: ask
      bash:                         # patterns for each simple command of a line
        "git status": allow
        "git log *": allow
        "rm *": deny
        "*": ask
      write_file:                   # path globs for the file tools
        "src/**": allow
        "**/.env": deny

A bash pattern is words: `git log *` is `git`, `log`, then any words (a last `*` stands for
any number of them, none included; `*` elsewhere for one word; `*` and `?` inside a word glob
within it). Every simple command of the line is checked (`shell_commands.py`: lists, pipes,
substitutions, subshells, wrappers unwrapped), and the line takes the strictest answer: one
denied command denies the line, one that asks asks, and the line is allowed only when each of
its commands is. A file tool's patterns are globs of the paths it touches (relative ones
against the project's folder, `**` across folders), checked on the path as given and on its
real path, symlinks followed.

Deny beats allow. A deny or ask pattern matches what a command might be: `/bin/rm` and `\\rm`
are `rm`, and a word known only at run time (`$CMD -rf`) might be anything, which asks. An
allow pattern matches only what is certain: the very program name it names, every word known,
nothing risky around it (output to a file outside the project, a prefix `PATH=`, `git -c`).
Between allow and ask, the more specific pattern (more literal characters) wins, ask on a tie.
A line the parser cannot read whole asks.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mm_tui.core.frozen import frozen

if TYPE_CHECKING:
    from mm_tui.engine.shell_commands import SimpleCommand

Action = Literal["allow", "ask", "deny"]
ACTIONS: tuple[Action, ...] = ("allow", "ask", "deny")
Cause = Literal["rule", "might", "unreadable"]
_STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}


@frozen
class Verdict:
    """What the rules say of one call. `rule` is the deciding pattern ("" when the line could
    not be read); `cause` says why an ask is one: a rule says so (`rule`), a deny or ask rule
    might match (`might`), the line is not read whole (`unreadable`)."""

    action: Action
    rule: str = ""
    cause: Cause = "rule"
    subject: str = ""  # the command or path it is about


@frozen
class Pattern:
    text: str
    action: Action
    words: tuple[str, ...]  # bash: the pattern's words; a file tool: one glob

    @property
    def specificity(self) -> int:
        return sum(1 for c in self.text if c not in "*?")


def pattern_error(tool: str, pattern: str) -> str | None:
    """Why a pattern is not one, in words for the configuration's error; None when it is."""
    if not pattern.strip():
        return "a pattern must not be empty"
    if tool == "bash":
        try:
            shlex.split(pattern)
        except ValueError as exc:
            return f"the pattern {pattern!r} is not shell words: {exc}"
    return None


def _pattern(tool: str, text: str, action: Any) -> Pattern:
    """A pattern of the configuration (checked by the settings: an action of ACTIONS)."""
    if action not in ACTIONS:
        raise ValueError(f"{action!r} is not one of allow, ask, deny")
    words = tuple(shlex.split(text)) if tool == "bash" else (text,)
    return Pattern(text=text, action=action, words=words or ("*",))


class PermissionRules:
    """The rules of every tool; `add` takes a rule the person gave in a permission box."""

    def __init__(self, tools: Mapping[str, tuple[Pattern, ...]] | None = None) -> None:
        self._tools: dict[str, tuple[Pattern, ...]] = dict(tools or {})

    @classmethod
    def from_config(cls, section: Mapping[str, Any] | None) -> PermissionRules:
        """From the settings' `permissions`: per tool an action, or patterns with actions."""
        tools: dict[str, tuple[Pattern, ...]] = {}
        for tool, value in (section or {}).items():
            given: dict[str, Any] = {"*": value} if isinstance(value, str) else dict(value)
            tools[tool] = tuple(_pattern(tool, p, a) for p, a in given.items())
        if tools.get("bash"):  # the grammar's import (60 ms) while the person types
            from mm_tui.core.preload import preload

            preload("mm-shell-grammar", "tree_sitter", "tree_sitter_bash")
        return cls(tools)

    def __bool__(self) -> bool:
        return any(self._tools.values())

    def add(self, tool: str, pattern: str, action: Action) -> None:
        kept = tuple(p for p in self._tools.get(tool, ()) if p.text != pattern)
        self._tools[tool] = (*kept, _pattern(tool, pattern, action))

    def patterns(self, tool: str) -> tuple[Pattern, ...]:
        """The patterns for `tool`: its own key's, and those of keys that glob its name."""
        found: list[Pattern] = []
        for key, patterns in self._tools.items():
            if key == tool or (any(c in key for c in "*?[") and fnmatch.fnmatchcase(tool, key)):
                found.extend(patterns)
        return tuple(found)

    def denies_any(self, tool: str) -> bool:
        return any(p.action == "deny" for p in self.patterns(tool))

    def check(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        paths: Iterable[str] = (),
        root: Path | None = None,
    ) -> Verdict | None:
        """The rules' verdict on a call; None when no rule speaks of it."""
        patterns = self.patterns(tool)
        if not patterns:
            return None
        if tool == "bash":
            return _line_verdict(patterns, str(arguments.get("command", "")))
        subjects = list(paths)
        if not subjects or all(p.words == ("*",) for p in patterns):
            whole = [p for p in patterns if p.words == ("*",)]
            return _strongest(whole, tool) if whole else None
        return _combined(_path_verdict(patterns, path, root) for path in subjects)


def _strongest(patterns: list[Pattern], subject: str) -> Verdict:
    best = max(patterns, key=lambda p: (_STRICTNESS[p.action], p.specificity))
    return Verdict(action=best.action, rule=best.text, subject=subject)


def _combined(verdicts: Iterable[Verdict | None]) -> Verdict | None:
    """The strictest of the parts' verdicts; allow only when every part is allowed."""
    strictest: Verdict | None = None
    unruled = False
    for verdict in verdicts:
        if verdict is None:
            unruled = True
        elif strictest is None or _STRICTNESS[verdict.action] > _STRICTNESS[strictest.action]:
            strictest = verdict
    if strictest is not None and strictest.action == "allow" and unruled:
        return None  # some part has no rule: the mode decides
    return strictest


def _line_verdict(patterns: tuple[Pattern, ...], line: str) -> Verdict | None:
    from mm_tui.engine.shell_commands import simple_commands

    commands = simple_commands(line)
    if commands is None:
        return Verdict(action="ask", cause="unreadable", subject=line)
    return _combined(_command_verdict(patterns, command) for command in commands)


def _command_verdict(patterns: tuple[Pattern, ...], command: SimpleCommand) -> Verdict | None:
    subject = " ".join(w if w is not None else "…" for w in command.words)
    guards: list[tuple[Pattern, bool]] = []  # deny and ask patterns: (pattern, certain)
    allows: list[Pattern] = []
    for pattern in patterns:
        if pattern.action == "allow":
            if not command.risky and _matches_surely(pattern.words, command):
                allows.append(pattern)
            continue
        match = _matches_maybe(pattern.words, command)
        if match is not None:
            guards.append((pattern, match))
    denied = [p for p, certain in guards if p.action == "deny" and certain]
    if denied:
        return Verdict(action="deny", rule=_most_specific(denied).text, subject=subject)
    doubtful = [p for p, certain in guards if p.action == "deny"]
    if doubtful:
        return Verdict(action="ask", rule=doubtful[0].text, cause="might", subject=subject)
    return _command_like([p for p, _ in guards], allows, subject)


def _most_specific(patterns: list[Pattern]) -> Pattern:
    return max(patterns, key=lambda p: p.specificity)


def _matches_surely(words: tuple[str, ...], command: SimpleCommand) -> bool:
    """An allow pattern: the command is certainly what it names."""
    return _match(words, command.words, command.open_end, sure=True) is True


def _matches_maybe(words: tuple[str, ...], command: SimpleCommand) -> bool | None:
    """A deny or ask pattern: True when it certainly matches, False when it might, None when
    it cannot."""
    return _match(words, command.words, command.open_end, sure=False)


def _match(
    pattern: tuple[str, ...], words: tuple[str | None, ...], open_end: bool, *, sure: bool
) -> bool | None:
    """True: matches; False: might match (a word unknown); None: does not match."""
    rest = pattern[-1] == "*"
    fixed = pattern[:-1] if rest else pattern
    certain = True
    for i, glob in enumerate(fixed):
        if i >= len(words):
            if open_end and not sure:
                return False  # xargs may add the words the pattern wants
            return None
        word = words[i]
        if word is None:
            if glob == "*":
                continue
            if sure:
                return None
            certain = False
            continue
        if i == 0 and not sure and "/" not in glob:
            word = os.path.basename(word)  # /bin/rm is rm, for a guard
        if not _word_matches(glob, word):
            return None
    if len(words) > len(fixed) and not rest:
        return None
    if open_end and not rest:
        if sure:
            return None
        certain = False
    return certain


@functools.lru_cache(maxsize=512)
def _word_regex(glob: str) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(glob), re.DOTALL)


def _word_matches(glob: str, word: str) -> bool:
    if not any(c in glob for c in "*?["):
        return glob == word
    return _word_regex(glob).match(word) is not None


def _path_verdict(patterns: tuple[Pattern, ...], path: str, root: Path | None) -> Verdict | None:
    given = os.path.abspath(os.path.expanduser(path))
    real = os.path.realpath(given)
    forms = {given, real}
    guards = [p for p in patterns if p.action != "allow" and _path_matches(p, forms, root, any)]
    allows = [p for p in patterns if p.action == "allow" and _path_matches(p, forms, root, all)]
    denied = [p for p in guards if p.action == "deny"]
    if denied:
        return Verdict(action="deny", rule=_most_specific(denied).text, subject=path)
    return _command_like(guards, allows, path)


def _command_like(asks: list[Pattern], allows: list[Pattern], subject: str) -> Verdict | None:
    if not asks and not allows:
        return None
    best_ask = _most_specific(asks) if asks else None
    best_allow = _most_specific(allows) if allows else None
    if best_allow is not None and (
        best_ask is None or best_allow.specificity > best_ask.specificity
    ):
        return Verdict(action="allow", rule=best_allow.text, subject=subject)
    assert best_ask is not None
    return Verdict(action="ask", rule=best_ask.text, subject=subject)


def _path_matches(pattern: Pattern, forms: set[str], root: Path | None, quantifier: Any) -> bool:
    glob = os.path.expanduser(pattern.words[0])
    regex = _path_regex(glob)
    return quantifier(_one_path_matches(regex, glob, form, root) for form in forms)


def _one_path_matches(regex: re.Pattern[str], glob: str, path: str, root: Path | None) -> bool:
    if glob.startswith("/"):
        return regex.fullmatch(path) is not None
    if glob in ("*", "**"):
        return True
    if root is None:
        return False
    base = str(root)
    if path != base and not path.startswith(base.rstrip("/") + "/"):
        return False
    return regex.fullmatch(os.path.relpath(path, base)) is not None


@functools.lru_cache(maxsize=512)
def _path_regex(glob: str) -> re.Pattern[str]:
    """`**` crosses folders (`**/` also matches none), `*` and `?` stay within one."""
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)


SUBCOMMANDS = frozenset(
    "git npm pnpm yarn bun cargo go docker podman kubectl pip pip3 uv poetry apt apt-get brew "
    "systemctl gh dotnet mvn gradle rustup conda helm terraform make just deno".split()
)
"""Programs whose second word says what they do: a suggested rule keeps it."""
INTERPRETERS = frozenset({"python", "python3"})


def suggested_pattern(
    tool: str, arguments: Mapping[str, Any], paths: Iterable[str], root: Path | None
) -> str:
    """The rule a permission box offers for calls like this one, for the person to keep or
    edit: `git log *` for `git log --oneline -5`, `src/app/**` for a file in src/app, `*` for
    a tool without a subject; "" when nothing certain fits (`$CMD …`, a line not read whole)."""
    if tool == "bash":
        return _command_pattern(str(arguments.get("command", "")))
    for path in paths:
        return _folder_pattern(path, root)
    return "*"


def _command_pattern(line: str) -> str:
    from mm_tui.engine.shell_commands import simple_commands

    commands = simple_commands(line)
    if not commands or commands[0].name is None or commands[0].risky:
        return ""
    words = list(commands[0].words)
    kept = [shlex.quote(str(words[0]))]
    second = words[1] if len(words) > 1 else None
    if words[0] in SUBCOMMANDS and second and re.fullmatch(r"[A-Za-z][A-Za-z0-9:_-]*", second):
        kept.append(second)  # `git log *`, not `git *`
    elif words[0] in INTERPRETERS and second == "-m" and len(words) > 2 and words[2]:
        kept += ["-m", shlex.quote(words[2])]  # `python -m pytest *`, not every program
    return " ".join((*kept, "*"))


def _folder_pattern(path: str, root: Path | None) -> str:
    folder = os.path.dirname(os.path.abspath(path))
    if root is not None:
        base = str(root).rstrip("/")
        if folder == base:
            return os.path.basename(path)
        if folder.startswith(base + "/"):
            return f"{os.path.relpath(folder, base)}/**"
    return f"{folder.rstrip('/')}/**"
