"""The snapshot /undo takes before each turn: its cost on a 10,000-file tree when few files
changed, against a bare `os.scandir` walk of the same tree.

A tree of 10,000 files of 1-4 KB in 200 folders (two levels) is made in a temporary folder, with
a `.git` of 500 files beside them (recorded by name only: not entered). The first snapshot reads
and stores every file (timed once, for the record). Then each round changes 3 files (one
edited, one created, one deleted) and times, interleaved so that the machine's load weighs on
both alike:
- snapshot: `Snapshots.take()` as the engine calls it before a turn (walk, compare with the
  previous manifest, read and store the 3 changed files, write the manifest of what changed);
- floor: a bare walk of the same tree with `os.scandir`, nothing but each entry's name and kind
  (`is_dir` from the folder listing, no stat);
- walk+lstat: the same walk with `entry.stat(follow_symlinks=False)` on each entry, the least
  any walk that notices a change must do.
Medians over the rounds; the goal (issue): snapshot ≤ 50 ms per turn when few files changed.

Run: .venv/bin/python bench/bench_undo.py  (--quick: 1,000 files, for the tests)
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mm_tui.engine.undo.snapshots import Snapshots  # noqa: E402

GOAL_MS = 50.0


def make_tree(root: Path, files: int) -> None:
    folders = max(1, files // 50)
    for n in range(files):
        folder = root / f"pkg{n % 20}" / f"mod{n % folders}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"file{n}.py").write_bytes(os.urandom(512 + (n % 4) * 1024))
    git = root / ".git" / "objects"
    git.mkdir(parents=True)
    for n in range(files // 20):
        (git / f"o{n}").write_bytes(b"x" * 100)


def bare_walk(root: str, stat: bool) -> int:
    """Every entry under `root`, as a plain scandir walk sees it (the `.git` entered too when it
    is not skipped: skipped here, as the snapshot does)."""
    count = 0
    stack = [root]
    while stack:
        with os.scandir(stack.pop()) as listing:
            for entry in listing:
                count += 1
                if stat:
                    entry.stat(follow_symlinks=False)
                if entry.is_dir(follow_symlinks=False) and entry.name != ".git":
                    stack.append(entry.path)
    return count


def main() -> None:
    from private_home import private_home

    private_home()  # a home of its own: none of the person's is read or written
    quick = "--quick" in sys.argv
    files = 1_000 if quick else 10_000
    rounds = 5 if quick else 21
    work = Path(tempfile.mkdtemp(prefix="mm-bench-undo-"))
    try:
        root = work / "project"
        root.mkdir()
        make_tree(root, files)
        snapshots = Snapshots(root, work / "state")
        started = time.perf_counter()
        _, manifest = snapshots.take()
        first = time.perf_counter() - started
        taken: list[float] = []
        floor: list[float] = []
        lstat: list[float] = []
        victims = sorted(p for p in manifest if p.endswith(".py"))
        for n in range(rounds):
            (root / victims[n]).write_bytes(os.urandom(600))  # edited
            (root / victims[-1 - n]).unlink()  # deleted
            (root / f"new{n}.py").write_text(f"print({n})\n")  # created
            started = time.perf_counter()
            bare_walk(str(root), stat=False)
            floor.append(time.perf_counter() - started)
            started = time.perf_counter()
            snapshots.take()
            taken.append(time.perf_counter() - started)
            started = time.perf_counter()
            bare_walk(str(root), stat=True)
            lstat.append(time.perf_counter() - started)
        store = sum(f.stat().st_size for f in (work / "state").rglob("*") if f.is_file())
    finally:
        shutil.rmtree(work)
    snap, bare, statted = (statistics.median(x) * 1000 for x in (taken, floor, lstat))
    print(f"bench_undo: {files:,} files (+{files // 20} in .git, by name only), {rounds} rounds")
    print(f"  load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    print(f"  first snapshot (reads and stores every file): {first * 1000:.0f} ms")
    print(f"  snapshot, 3 files changed:  median {snap:.1f} ms  (max {max(taken) * 1000:.1f})")
    print(f"  floor, bare os.scandir walk: median {bare:.1f} ms  -> snapshot is {snap / bare:.1f}x")
    print(
        f"  walk with lstat:            median {statted:.1f} ms  -> snapshot is {snap / statted:.1f}x"
    )
    print(f"  store after {rounds + 1} snapshots: {store / 1e6:.1f} MB")
    verdict = "met" if snap <= GOAL_MS else "MISSED"
    print(f"  goal: snapshot <= {GOAL_MS:.0f} ms per turn ({files:,} files): {verdict}")


if __name__ == "__main__":
    main()
