"""The suite's tables, in Markdown: one summary row per model and format, and the task-by-task
table of each, with what the model did (the tools it called, the start of its answer)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from suite.runner import TaskResult

SUMMARY_HEADER = (
    "| model | format | tasks | turns ended cleanly | tool calls made "
    "| calls recovered from text | tasks checked out | stops |"
)


@dataclass(frozen=True)
class Run:
    """One model under one format: its tasks' results."""

    model: str
    format: str
    results: tuple[TaskResult, ...]

    @property
    def clean(self) -> int:
        return sum(r.clean for r in self.results)

    @property
    def calls(self) -> int:
        return sum(r.calls for r in self.results)

    @property
    def from_text(self) -> int:
        return sum(r.from_text for r in self.results)

    @property
    def checked(self) -> int:
        return sum(r.checked for r in self.results)

    def stops(self) -> str:
        """How the turns ended, each stop reason with its count ("end_turn 18, timeout 2")."""
        counts: dict[str, int] = {}
        for r in self.results:
            counts[r.stop] = counts.get(r.stop, 0) + 1
        return ", ".join(f"{stop} {n}" for stop, n in sorted(counts.items()))


def cell(text: str) -> str:
    """Text in a table cell: no pipe or line break ends the cell early."""
    return " ".join(text.replace("|", "\\|").replace("`", "'").split())


def summary_table(runs: Sequence[Run]) -> str:
    lines = [SUMMARY_HEADER, "|" + " --- |" * 8]
    for run in runs:
        lines.append(
            f"| {run.model} | {cell(run.format)} | {len(run.results)} | {run.clean} | "
            f"{run.calls} | {run.from_text} | {run.checked} | {run.stops()} |"
        )
    return "\n".join(lines)


def tasks_table(run: Run) -> str:
    lines = [
        f"#### {run.model}, {run.format}",
        "",
        "| task | kind | stop | clean | calls (from text) | checked | seconds | calls made "
        "| answer begins |",
        "|" + " --- |" * 9,
    ]
    for r in run.results:
        tools = "; ".join(r.tools[:2]) + (
            f"; … {len(r.tools) - 2} more" if len(r.tools) > 2 else ""
        )
        lines.append(
            f"| {r.task} | {r.kind} | {r.stop} | {'yes' if r.clean else 'no'} | "
            f"{r.calls} ({r.from_text}) | {'yes' if r.checked else 'no'} | {r.seconds:g} | "
            f"{cell(tools) or '-'} | {cell(r.answer[:80]) or '-'} |"
        )
    return "\n".join(lines)


def report(runs: Sequence[Run]) -> str:
    """The summary, then each run's tasks."""
    parts = [summary_table(runs)]
    parts += [tasks_table(run) for run in runs]
    return "\n\n".join(parts) + "\n"
