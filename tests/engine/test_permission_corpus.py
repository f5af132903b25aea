"""The permission rules never allow a line that runs a command a deny rule covers.

Held against what bash really runs, not against what a parser says: every line of the corpus
(tests/engine/shell_corpus/: peers' test suites, parsers' test corpora, real shell histories,
READMEs, and the hard forms written for it) runs in the shell oracle (`support.shell_oracle`),
where every program is a stub that logs its argv, and for each rule set below, a line whose log
holds a program a deny pattern names must not be allowed (ask and deny are both fine: a rule
that cannot tell must ask).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import shell_oracle
from support.shell_oracle import Run, ShellOracle, runs_pattern

from mm_tui.engine.permission_rules import PermissionRules

CORPUS = Path(__file__).parent / "shell_corpus"
RULE_SETS: list[dict[str, str]] = [
    {"rm *": "deny", "git push *": "deny", "curl *": "deny", "*": "allow"},
    {"rm -rf *": "deny", "git push --force *": "deny", "git reset --hard *": "deny", "*": "allow"},
    {
        "sudo *": "deny",
        "wget *": "deny",
        "git clean *": "deny",
        "npm install *": "deny",
        "*": "allow",
    },
    {
        "rm *": "deny",
        "git push *": "deny",
        "git *": "allow",
        "echo *": "allow",
        "ls *": "allow",
        "cat *": "allow",
        "*": "ask",
    },
]


def corpus_lines() -> list[str]:
    """Every line of the corpus files: one a line, `json:` before a JSON string (a line that
    holds newlines), `#` before a comment."""
    lines: list[str] = []
    for path in sorted(CORPUS.glob("*.txt")):
        for raw in path.read_text(encoding="utf-8").splitlines():
            if not raw.strip() or raw.startswith("#"):
                continue
            lines.append(json.loads(raw[5:]) if raw.startswith("json:") else raw)
    return lines


@pytest.fixture(scope="module")
def runs() -> Iterator[list[Run]]:
    """What each corpus line ran, once for every rule set."""
    reason = shell_oracle.missing()
    if reason is not None:
        pytest.skip(reason)
    lines = corpus_lines()
    with ShellOracle(shell_oracle.command_names(lines)) as oracle:
        yield oracle.run_all(lines, workers=min(4, os.cpu_count() or 1))


def denied_runs(run: Run, rules: dict[str, str]) -> list[tuple[str, list[str]]]:
    """The (deny pattern, argv) pairs of what `run` ran."""
    patterns = [p for p, action in rules.items() if action == "deny"]
    return [(p, argv) for argv in run.argvs for p in patterns if runs_pattern(argv, p)]


def test_the_corpus_is_large_and_real() -> None:
    lines = corpus_lines()
    assert len(lines) >= 300
    assert len(set(lines)) == len(lines), "a line is in the corpus twice"


def test_no_line_that_runs_a_denied_command_is_allowed(runs: list[Run]) -> None:
    """The requirement: across the corpus, no line allowed that a deny rule covers."""
    failures: list[str] = []
    for rules in RULE_SETS:
        checker = PermissionRules.from_config({"bash": rules})
        for run in runs:
            seen = denied_runs(run, rules)
            if not seen:
                continue
            verdict = checker.check("bash", {"command": run.line})
            if verdict is not None and verdict.action == "allow":
                failures.append(f"{rules}\n  line: {run.line!r}\n  ran: {seen}")
    assert not failures, f"{len(failures)} allowed lines ran a denied command:\n" + "\n".join(
        failures
    )


def test_the_oracle_sees_denied_commands_run_in_many_lines(runs: list[Run]) -> None:
    """So that the test above can fail: a good share of the lines really run rm, git push or
    curl, and no line ran into the oracle's timeout (a line that loops forever shows nothing)."""
    rules = RULE_SETS[0]
    assert sum(1 for run in runs if denied_runs(run, rules)) >= 60
    assert [run.line for run in runs if run.timed_out] == []


def test_lines_the_parser_cannot_read_are_listed(runs: list[Run]) -> None:
    """A line the parser cannot read asks; those lines are printed for the rules' author."""
    checker = PermissionRules.from_config({"bash": RULE_SETS[0]})
    unreadable = []
    for run in runs:
        verdict = checker.check("bash", {"command": run.line})
        if verdict is not None and verdict.cause == "unreadable":
            assert verdict.action == "ask"
            unreadable.append(run.line)
    print(f"\n{len(unreadable)} of {len(runs)} corpus lines ask because they cannot be read:")
    for line in unreadable:
        print(f"  {line!r}")
