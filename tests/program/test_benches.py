"""Every benchmark still runs: each bench/bench_*.py (found by a glob, so a new one is run too)
at `--quick`, a size of seconds that goes through every variant, child process and check of the
full run. A bench that no longer runs (an exception, a child that failed, a check on what it
measured) exits non-zero and fails here, rather than rotting until someone runs `make bench`.
Its figures are not looked at: they come from full runs, and a quick run may miss its goals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.env import leaks

ROOT = Path(__file__).resolve().parents[2]
BENCHES = sorted(ROOT.glob("bench/bench_*.py"))
# A second or two at --quick on a shared two-core machine. Any other bench is marked slow (the
# others take 4 to 15 s, bench_peers the longest: mm and a client, each started twice in tmux), a
# new one too until it is measured; bench_e2e as well, which is quick only where it skips.
FAST = {
    "bench_bash",
    "bench_edit",
    "bench_fetch",
    "bench_fetch_corpus",
    "bench_prompt_overhead",
    "bench_provider",
    "bench_session",
    "bench_undo",
}
TIMEOUT = 300  # a guard against a hang, far above the slowest quick run seen (about 15 s)
GRACE = 10  # seconds after Ctrl+C for its finally blocks to stop its servers


def bench_env(tmp_path: Path) -> dict[str, str]:
    """This environment without the person's mm settings, keys, proxies and XDG folders, with a
    fresh HOME and TMPDIR: a bench reads no configuration of theirs and leaves nothing in
    their home (bench_fetch_corpus's cache) or in /tmp."""
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if not leaks(k) and not k.startswith("XDG_")}
    env.update(HOME=str(home), TMPDIR=str(tmp))
    return env


def run_quick(bench: Path, env: dict[str, str]) -> tuple[int, str]:
    """The bench at --quick in its own process group: (exit status, output and errors as they
    came). One that outlasts TIMEOUT is interrupted as Ctrl+C would, then killed, and fails."""
    proc = subprocess.Popen(
        [sys.executable, str(bench), "--quick"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            output, _ = proc.communicate(timeout=GRACE)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
        return -1, f"{output}\n(still running after {TIMEOUT} s: stopped)"
    return proc.returncode, output


def tail(output: str, lines: int = 40) -> str:
    return "\n".join(output.rstrip().splitlines()[-lines:])


@pytest.mark.timeout(TIMEOUT + GRACE + 30)
@pytest.mark.parametrize(
    "bench",
    [pytest.param(b, id=b.stem, marks=() if b.stem in FAST else pytest.mark.slow) for b in BENCHES],
)
def test_the_bench_runs_at_quick_size(bench: Path, tmp_path: Path) -> None:
    env = bench_env(tmp_path)
    status, output = run_quick(bench, env)
    assert status == 0, (
        f"{bench.name} --quick exited {status}; the end of its output:\n{tail(output)}"
    )
    # It ran mm in a home of its own (bench/private_home.py): the person's holds nothing new
    # but what the benches download once into their cache.
    assert left_in(Path(env["HOME"])) == []


def left_in(home: Path) -> list[str]:
    """What is in `home`, the benches' download cache (.cache/mm-bench) left out."""
    cache = home / ".cache" / "mm-bench"
    return sorted(
        str(path.relative_to(home))
        for path in home.rglob("*")
        if path.is_file() and cache not in path.parents
    )


def test_the_benches_are_found() -> None:
    """The glob finds the benches (a moved folder would leave the test above with none)."""
    assert {"bench_round_trip", "bench_window_turn", "bench_e2e"} <= {b.stem for b in BENCHES}
