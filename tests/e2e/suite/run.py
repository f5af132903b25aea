"""The task suite on real small models: every task of tasks.py, run by the real `mm -p` on
llama-cpp-python's server, for each model (SmolLM2-135M-Instruct, Gemma 3 270M) under each chat
format (`chatml-function-calling`, and the model's own); then a Markdown table per model and
format: tasks, turns ended cleanly, tool calls made, calls recovered from text, tasks checked out.

It measures, it does not judge: the exit status is 0 whatever the models did, and non-zero only
when the suite could not run (no e2e environment, a server that did not start, an unknown name).
`make e2e-suite` runs it all (about an hour on two cores); `make e2e` runs two tasks of it on
SmolLM2 (tests/e2e/test_e2e_suite.py), so that it cannot rot unseen.

    python tests/e2e/suite/run.py [--models smollm2,gemma3] [--formats chatml-function-calling,own]
        [--tasks secret_word,fix_typo] [--task-seconds 45] [--max-turns 4] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent.parent), str(HERE.parent)]  # tests/ and tests/e2e/

from llama_server import LlamaServer, ServerUnavailable, e2e_python  # noqa: E402
from support.folders import held  # noqa: E402

from suite.models import Model, formats_named, models_named  # noqa: E402
from suite.report import Run, report  # noqa: E402
from suite.runner import run_task  # noqa: E402
from suite.tasks import Task, by_name  # noqa: E402

TASK_SECONDS = 45.0
MAX_TURNS = 4
PROJECT = Path(tempfile.gettempdir()) / "mm-suite-project"
HOME = Path(tempfile.gettempdir()) / "mm-suite-home"


def versions(python: Path) -> str:
    """llama-cpp-python's version in the e2e environment, and this Python's."""
    found = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('llama_cpp_python'))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    llama = found.stdout.strip() or "unknown"
    return f"llama-cpp-python {llama}, Python {sys.version.split()[0]}"


def machine_load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def run_model(
    model: Model, fmt: str, tasks: Sequence[Task], args: argparse.Namespace, log_dir: Path
) -> Run:
    python = e2e_python()
    server = LlamaServer(
        python,
        model.locate(python),
        alias=model.name,
        chat_format=model.chat_format(fmt),
        log=log_dir / f"{model.key}-{fmt}.log",
    )
    label = model.format_label(fmt)
    results = []
    with server:
        for task in tasks:
            # The folders are shared by the runs of the machine: a task holds them while it runs.
            with held(PROJECT) as project:
                result = run_task(
                    task,
                    server,
                    project=project,
                    home=HOME,
                    seconds=args.task_seconds,
                    max_turns=args.max_turns,
                )
            results.append(result)
            if result.stop == "timeout":
                # The answer mm left behind may run to the end of the context, minutes on a
                # busy machine: a new server is ready in seconds.
                server.stop(grace=0)
                server.start()
            else:
                server.wait_idle(timeout=600)
            print(
                f"  {model.name} · {label} · {task.name}: {result.stop}, {result.calls} calls "
                f"({result.from_text} from text), {'checked' if result.checked else 'not checked'}"
                f", {result.seconds:g}s (load {machine_load()})",
                file=sys.stderr,
                flush=True,
            )
    return Run(model.name, label, tuple(results))


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=None, help="comma-separated: smollm2,gemma3 (default all)")
    p.add_argument("--formats", default=None, help="chatml-function-calling,own (default both)")
    p.add_argument("--tasks", default=None, help="comma-separated task names (default all)")
    p.add_argument("--task-seconds", type=float, default=TASK_SECONDS, help="the bound per task")
    p.add_argument("--max-turns", type=int, default=MAX_TURNS, help="mm's maxTurns per task")
    p.add_argument("--json", type=Path, default=None, help="also write the results as JSON")
    return p.parse_args(argv)


def write_json(path: Path, header: str, runs: Sequence[Run]) -> None:
    data = {
        "header": header,
        "runs": [
            {"model": r.model, "format": r.format, "results": [x.to_json() for x in r.results]}
            for r in runs
        ],
    }
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    # Killed, the suite stops its server on the way out (the `with` blocks), as on Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        models, formats = models_named(args.models), formats_named(args.formats)
        tasks = by_name(args.tasks)
    except ValueError as exc:
        print(f"suite: {exc}", file=sys.stderr)
        return 2
    began = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    settings = (
        f"{args.task_seconds:g} s a task, maxTurns {args.max_turns}, temperature 0, "
        f"2,048-token context, {versions(e2e_python())}"
    )
    print(f"suite: {len(tasks)} tasks, {settings}; load {machine_load()}", file=sys.stderr)
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="mm-suite-logs-") as logs:
        try:
            for model in models:
                for fmt in formats:
                    runs.append(run_model(model, fmt, tasks, args, Path(logs)))
                    if args.json:  # as it goes: an interrupted run keeps what it measured
                        write_json(args.json, f"Run {began}, {settings} (unfinished).", runs)
        except ServerUnavailable as exc:
            print(f"suite: {exc}", file=sys.stderr)
            return 2
    header = f"Run {began}, {settings}; load at the end {machine_load()}."
    print(header + "\n\n" + report(runs))
    if args.json:
        write_json(args.json, header, runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
