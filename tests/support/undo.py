"""Helpers of the /undo tests: a tree's hash computed apart from mm's own walk, and an engine
whose turn runs one bash command through the real bash tool."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from mm_tui.engine.turn import Engine
from support.engine import make_engine
from support.scripted_model import ScriptedModel, call, say


def tree_hash(root: Path, skip: tuple[str, ...] = ()) -> str:
    """Every path under `root` with its kind, permission bits and contents (a link's target),
    hashed; `skip`: top-level names left out. Written apart from engine/undo/ on purpose."""
    h = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        rel_folder = os.path.relpath(folder, root)
        if rel_folder == ".":
            dirs[:] = [d for d in dirs if d not in skip]
            files = [f for f in files if f not in skip]
        for name in sorted([*dirs, *files]):
            path = os.path.join(folder, name)
            rel = os.path.normpath(os.path.join(rel_folder, name))
            st = os.lstat(path)
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                what = "link " + os.readlink(path)
            elif stat.S_ISDIR(st.st_mode):
                what = "dir"
            else:
                what = "file " + hashlib.sha256(Path(path).read_bytes()).hexdigest()
            h.update(f"{rel}\0{mode:o}\0{what}\n".encode())
        dirs.sort()
    return h.hexdigest()


def bash_turns(cwd: Path, sessions: Path, *commands: str) -> tuple[Engine, ScriptedModel]:
    """An engine in `cwd` whose turns each run one of `commands` with the bash tool, then
    answer "done"."""
    replies = []
    for number, command in enumerate(commands):
        replies += [call("bash", {"command": command}, f"c{number}"), say("done")]
    model = ScriptedModel(*replies)
    return make_engine(cwd, model, sessions=sessions, yolo=True), model
