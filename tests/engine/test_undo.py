"""/undo in the engine, on real files in temporary folders: whatever changed them (the bash
tool's `sed -i`, `rm -rf`, `mv`, `chmod`, write_file), the plan first, then the changes, the
note the model gets, a second /undo that redoes, and what is recorded by name only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.engine import make_engine, of, turn
from support.scripted_model import ScriptedModel, call, say
from support.undo import bash_turns, tree_hash

from mm_tui.core.events import Event, FilesRestored
from mm_tui.engine.session import Session
from mm_tui.engine.undo.snapshots import UndoError
from mm_tui.engine.undo.store import Store


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hello')\n")
    (root / "README").write_text("read me\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    return root


async def test_undo_brings_back_what_commands_changed(project: Path, tmp_path: Path) -> None:
    before = tree_hash(project)
    script = (
        "sed -i s/hello/bye/ src/app.py && rm -rf README && mv run.sh go.sh && "
        "chmod 600 go.sh && mkdir -p build/out && echo x > build/out/a.o && ln -s src lnk"
    )
    engine, model = bash_turns(project, tmp_path / "sessions", script)
    await turn(engine, "break things")
    assert tree_hash(project) != before
    pending = await engine.plan_undo()
    assert pending.plan.title == "/undo the last turn: the files as they were before turn 1"
    assert pending.plan.lines() == [
        "bring back README",
        "delete     build",
        "delete     build/out",
        "delete     build/out/a.o",
        "delete     go.sh",
        "delete     lnk",
        "bring back run.sh",
        "restore    src/app.py",
    ]
    assert tree_hash(project) != before  # the plan changes nothing
    events: list[Event] = []
    done = await engine.undo(pending, events.append)
    assert tree_hash(project) == before
    assert done.failed == ()
    (restored,) = of(events, FilesRestored)
    assert restored.text == "undo: undone (1 turn): 1 restored, 2 brought back, 5 deleted"
    # the model hears of it with the next request, in the person's message
    await turn(engine, "what now?")
    user = model.requests[-1][-1]
    assert user["role"] == "user"
    assert user["content"].startswith("[mm: the person ran /undo: the project's files are back")
    assert "restored src/app.py" in user["content"]
    assert user["content"].endswith("\n\nwhat now?")
    assert model.requests[-1][-2]["role"] == "assistant"  # roles still alternate


async def test_undo_twice_redoes_and_three_times_undoes(project: Path, tmp_path: Path) -> None:
    engine, _ = bash_turns(project, tmp_path / "s", "echo new > src/app.py && rm run.sh")
    before = tree_hash(project)
    await turn(engine, "go")
    after = tree_hash(project)
    await engine.undo(await engine.plan_undo(), lambda e: None)
    assert tree_hash(project) == before
    redo = await engine.plan_undo()
    assert redo.plan.redo
    assert redo.plan.title == "/undo again: redo what the last /undo undid"
    await engine.undo(redo, lambda e: None)
    assert tree_hash(project) == after
    await engine.undo(await engine.plan_undo(), lambda e: None)
    assert tree_hash(project) == before


async def test_undo_n_turns_and_its_limits(project: Path, tmp_path: Path) -> None:
    engine, _ = bash_turns(
        project, tmp_path / "s", "echo one > a", "echo two >> a && rm README", "echo 3 > b"
    )
    with pytest.raises(UndoError, match="no turn to undo"):
        await engine.plan_undo()
    hashes = [tree_hash(project)]
    for text in ("one", "two", "three"):
        await turn(engine, text)
        hashes.append(tree_hash(project))
    with pytest.raises(UndoError, match="only 3 turns can be undone"):
        await engine.plan_undo(4)
    with pytest.raises(UndoError, match="1 or more"):
        await engine.plan_undo(0)
    pending = await engine.plan_undo(2)
    assert pending.plan.title.startswith(
        "/undo the last 2 turns: the files as they were before turn 2"
    )
    await engine.undo(pending, lambda e: None)
    assert tree_hash(project) == hashes[1]
    # a turn after it, then /undo: back to before that turn, and the undone ones stay undone
    engine.client.responses[:] = [call("bash", {"command": "echo four > c"}, "c9"), say("ok")]  # type: ignore[attr-defined]
    await turn(engine, "four")
    await engine.undo(await engine.plan_undo(), lambda e: None)
    assert tree_hash(project) == hashes[1]
    assert (await engine.plan_undo()).plan.redo  # right after an /undo, /undo alone redoes
    further = await engine.plan_undo(1)  # and /undo N goes further back
    assert not further.plan.redo and further.plan.turn == 1


async def test_a_stale_plan_and_a_busy_engine_are_refused(project: Path, tmp_path: Path) -> None:
    engine, _ = bash_turns(project, tmp_path / "s", "rm README", "rm run.sh")
    await turn(engine, "one")
    pending = await engine.plan_undo()
    await turn(engine, "two")
    with pytest.raises(UndoError, match="ask /undo again"):
        await engine.undo(pending, lambda e: None)
    assert not (project / "README").exists()


async def test_a_resumed_session_undoes_its_turns(project: Path, tmp_path: Path) -> None:
    sessions = tmp_path / "s"
    engine, _ = bash_turns(project, sessions, "rm README && echo x > new")
    before = tree_hash(project)
    await turn(engine, "go")
    await engine.aclose()
    loaded = Session.load(sessions, engine.session.id)
    again = make_engine(project, ScriptedModel(), sessions=sessions, session=loaded)
    await again.undo(await again.plan_undo(), lambda e: None)
    assert tree_hash(project) == before
    await again.aclose()
    # and the note for the model waits in the journal for the next request
    model = ScriptedModel()
    third = make_engine(
        project, model, sessions=sessions, session=Session.load(sessions, loaded.id)
    )
    await turn(third, "hi")
    assert model.requests[-1][-1]["content"].startswith("[mm: the person ran /undo")
    await third.aclose()


async def test_name_only_files_are_left_and_said_so(project: Path, tmp_path: Path) -> None:
    (project / "big.bin").write_bytes(b"x" * (5 * 1024 * 1024 + 1))
    (project / ".git").mkdir()
    script = (
        "echo y >> big.bin && mkdir node_modules && echo m > node_modules/m.js && "
        "echo h > .git/HEAD && echo small > small.txt"
    )
    engine, _ = bash_turns(project, tmp_path / "s", script)
    await turn(engine, "go")
    pending = await engine.plan_undo()
    assert pending.plan.lines() == [
        "delete     small.txt",
        "left       .git (changed, but recorded by name only (skipped))",
        "left       big.bin (changed, but recorded by name only (large))",
        "left       node_modules (new, recorded by name only (skipped))",
    ]
    done = await engine.undo(pending, lambda e: None)
    assert "2 left as they are" not in done.text and "3 left as they are" in done.text
    assert (project / "node_modules" / "m.js").exists()
    assert (project / ".git" / "HEAD").read_text() == "h\n"
    # nothing of the big file's bytes was kept
    store = engine.snapshots.store
    assert sum(f.stat().st_size for f in store.objects.rglob("*") if f.is_file()) < 1024


async def test_the_session_folder_in_the_project_is_not_recorded(project: Path) -> None:
    sessions = project / ".mm" / "sessions"
    model = ScriptedModel(call("write_file", {"path": "w.txt", "content": "w"}), say("ok"))
    engine = make_engine(project, model, sessions=sessions, yolo=True)
    await turn(engine, "write")
    pending = await engine.plan_undo()
    assert pending.plan.lines() == ["delete     w.txt"]  # the journal is not in it
    await engine.undo(pending, lambda e: None)
    assert engine.session.path.exists()


async def test_snapshots_are_kept_owner_only_in_the_state_folder(
    project: Path, tmp_path: Path
) -> None:
    engine, _ = bash_turns(project, tmp_path / "s", "true")
    await turn(engine, "go")
    folder = engine.snapshots.store.folder
    assert folder.is_relative_to(Path(os.environ["XDG_STATE_HOME"]) / "mm" / "undo")
    assert not folder.is_relative_to(project)
    for path in folder.rglob("*"):
        wanted = 0o700 if path.is_dir() else 0o600
        assert path.stat().st_mode & 0o777 == wanted, path
    assert Store(folder).latest() is not None


async def test_a_project_too_big_to_record_is_said_once_and_not_walked_again(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mm started in a folder of more files than /undo records (a home folder): the first turn
    says so, the next turns neither say it again nor walk the folder, and /undo says why it
    cannot go back."""
    from mm_tui.core.events import EngineError
    from mm_tui.engine.undo import snapshot

    monkeypatch.setattr(snapshot, "MAX_ENTRIES", 3)  # the project holds 5 entries
    walks: list[int] = []
    scan = snapshot.scan
    monkeypatch.setattr(
        "mm_tui.engine.undo.snapshots.scan", lambda *a, **k: walks.append(1) or scan(*a, **k)
    )
    engine, _ = bash_turns(project, tmp_path / "sessions", "echo a > a.txt", "echo b > b.txt")
    first = await turn(engine, "one")
    second = await turn(engine, "two")
    warned = [e.message for e in of(first, EngineError)]
    assert warned == [
        "[warning: the project is too big for /undo to record (it holds more than 3 files and "
        "folders) — /undo is off for it in this session]"
    ]
    assert of(second, EngineError) == []
    assert walks == [1]
    with pytest.raises(UndoError, match="could not be recorded before turn 2"):
        await engine.plan_undo()
    await engine.aclose()
