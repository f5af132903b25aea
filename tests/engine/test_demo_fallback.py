"""With no model server, the interactive front ends run the demo model as `mm --demo` does: in a
throw-away playground, never in the person's own folder; and the demo never claims a success that
a tool refused or a person rejected."""

from __future__ import annotations

import os
import time
from pathlib import Path

from support.engine import of, turn

from mm_tui.config import Settings
from mm_tui.core.events import Decision, TextDelta, ToolCallFinished
from mm_tui.core.paths import user_state_dir
from mm_tui.engine.demo import DemoModel
from mm_tui.engine.playground import KEPT_FOR, make_playground
from mm_tui.startup import start


async def test_no_server_puts_the_demo_in_a_playground(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("the person's own file\n")
    started = await start(Settings(), tmp_path, presets=(), playground=True)
    engine = started.engine
    assert isinstance(engine.client, DemoModel)
    assert engine.cwd != tmp_path and (engine.cwd / "greet.py").is_file()
    assert f"the demo works in a throw-away playground: {engine.cwd}" in started.notes
    # its sessions go where every session goes, mm's state folder: not in the person's folder
    assert engine.session.folder.is_relative_to(user_state_dir() / "sessions")
    events = await turn(engine, "fix the typo in greet.py")
    assert of(events, ToolCallFinished)[0].status == "ok"
    assert "Hello" in (engine.cwd / "greet.py").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt"]  # nothing written here
    await engine.aclose()


async def test_print_mode_keeps_its_folder(tmp_path: Path) -> None:
    started = await start(Settings(), tmp_path, presets=())
    assert started.engine.cwd == tmp_path
    await started.engine.aclose()


async def test_the_demo_says_when_its_call_was_rejected_or_failed(tmp_path: Path) -> None:
    folder = make_playground(tmp_path)
    started = await start(Settings(yolo=False), folder, demo=True)
    engine = started.engine
    events = await turn(engine, "fix the typo in greet.py", lambda request: Decision.REJECT)
    said = "".join(e.text for e in of(events, TextDelta))
    assert said.startswith("You rejected the edit_file call, so nothing was done.")
    assert "I fixed" not in said
    (folder / "greet.py").unlink()
    events = await turn(engine, "fix the typo in greet.py", lambda request: Decision.ALLOW_ONCE)
    said = "".join(e.text for e in of(events, TextDelta))
    assert of(events, ToolCallFinished)[-1].status == "error"
    assert said.startswith("The edit_file call failed, so nothing was done:")
    # bash says its rejection as "[command rejected by the user]"
    events = await turn(engine, "run the tests", lambda request: Decision.REJECT)
    said = "".join(e.text for e in of(events, TextDelta))
    assert said.startswith("You rejected the bash call, so nothing was done."), said
    assert "The tests ran" not in said
    await engine.aclose()


def test_old_playgrounds_go_when_a_new_one_is_made(tmp_path: Path) -> None:
    """Demo playgrounds do not pile up in the temp folder: a new one removes this user's that
    are older than three days, and leaves a recent one, a link and other folders alone."""
    old = make_playground(tmp_path)
    recent = make_playground(tmp_path)
    other = tmp_path / "mm-demo-mine-but-not-a-folder"
    other.symlink_to(old)
    unrelated = tmp_path / "keep-me"
    unrelated.mkdir()
    long_ago = time.time() - KEPT_FOR - 60
    for path in (old, unrelated):
        os.utime(path, (long_ago, long_ago))
    new = make_playground(tmp_path)
    assert not old.exists() and recent.exists() and new.exists() and unrelated.exists()
    assert other.is_symlink()
