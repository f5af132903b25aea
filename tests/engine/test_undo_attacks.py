"""/undo as an attacker would try it: a command of the model plants links to what lies outside
the project (a stand-in for `~/.ssh` and `/etc`), swaps a folder for a link between the plan
and its changes, or a manifest names a path out of the project. Nothing outside is read into
the snapshots, written, or deleted."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.engine import turn
from support.undo import bash_turns, tree_hash

from mm_tui.engine.undo.restore import CREATE, DELETE, RESTORE, Change, apply_changes
from mm_tui.engine.undo.snapshots import Snapshots
from mm_tui.engine.undo.store import FILE, Entry


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """The person's own things, out of the project."""
    folder = tmp_path / "home" / ".ssh"
    folder.mkdir(parents=True)
    (folder / "id_rsa").write_text("SECRET KEY\n")
    (folder / "app.py").write_text("the person's own\n")
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hello')\n")
    return root


def stored_bytes(snapshots: Snapshots) -> list[bytes]:
    return [f.read_bytes() for f in snapshots.store.objects.rglob("*") if f.is_file()]


async def test_a_folder_swapped_for_a_link_out_is_restored_without_writing_through_it(
    project: Path, outside: Path, tmp_path: Path
) -> None:
    before = tree_hash(project)
    mine = tree_hash(outside)
    engine, _ = bash_turns(project, tmp_path / "s", f"rm -rf src && ln -s {outside} src")
    await turn(engine, "swap")
    pending = await engine.plan_undo()
    assert pending.plan.lines() == ["restore    src", "bring back src/app.py"]
    done = await engine.undo(pending, lambda e: None)
    assert done.failed == ()
    assert tree_hash(project) == before
    assert not (project / "src").is_symlink()
    assert tree_hash(outside) == mine  # its app.py was not overwritten


async def test_links_to_secrets_are_recorded_as_links_never_read(
    project: Path, outside: Path, tmp_path: Path
) -> None:
    script = f"ln -s {outside}/id_rsa key && ln -s {outside} dotssh && ln -s {outside}/id_rsa src/app.py.bak"
    engine, _ = bash_turns(project, tmp_path / "s", script, "rm key dotssh src/app.py.bak")
    await turn(engine, "plant")
    await turn(engine, "clear")  # the snapshot before this turn holds the links
    assert not any(b"SECRET" in data for data in stored_bytes(engine.snapshots))
    manifest = engine.snapshots.store.read(engine.snapshots.store.latest() or "")
    assert manifest is not None
    assert manifest["key"].kind == "l" and manifest["key"].data == f"{outside}/id_rsa"
    assert "dotssh/id_rsa" not in manifest  # a link to a folder is not entered
    # undoing the last turn brings the links back as links
    await engine.undo(await engine.plan_undo(), lambda e: None)
    assert os.readlink(project / "key") == f"{outside}/id_rsa"
    assert (outside / "id_rsa").read_text() == "SECRET KEY\n"


async def test_undoing_a_created_link_removes_the_link_not_its_target(
    project: Path, outside: Path, tmp_path: Path
) -> None:
    engine, _ = bash_turns(
        project, tmp_path / "s", f"ln -s {outside} out && ln -s {outside}/id_rsa k"
    )
    mine = tree_hash(outside)
    await turn(engine, "plant")
    pending = await engine.plan_undo()
    assert pending.plan.lines() == ["delete     k", "delete     out"]
    await engine.undo(pending, lambda e: None)
    assert not (project / "out").exists() and not (project / "k").exists()
    assert tree_hash(outside) == mine


async def test_a_link_swapped_in_after_the_plan_is_not_written_through(
    project: Path, outside: Path, tmp_path: Path
) -> None:
    engine, _ = bash_turns(project, tmp_path / "s", "echo changed > src/app.py")
    mine = tree_hash(outside)
    await turn(engine, "change")
    pending = await engine.plan_undo()
    assert pending.plan.lines() == ["restore    src/app.py"]
    # between the plan and the yes, the folder becomes a link out
    (project / "src" / "app.py").unlink()
    (project / "src").rmdir()
    (project / "src").symlink_to(outside)
    done = await engine.undo(pending, lambda e: None)
    assert [(f.path, f.why) for f in done.failed] == [
        ("src/app.py", "a link or a file stands where its folder was")
    ]
    assert tree_hash(outside) == mine


async def test_a_file_changed_after_the_plan_is_left_as_it_is(
    project: Path, tmp_path: Path
) -> None:
    engine, _ = bash_turns(project, tmp_path / "s", "echo changed > src/app.py && echo n > new")
    await turn(engine, "change")
    pending = await engine.plan_undo()
    (project / "src" / "app.py").write_text("the person's edit, made meanwhile\n")
    (project / "new").write_text("and this one too\n")
    done = await engine.undo(pending, lambda e: None)
    assert {f.path for f in done.failed} == {"src/app.py", "new"}
    assert (project / "src" / "app.py").read_text() == "the person's edit, made meanwhile\n"
    assert (project / "new").read_text() == "and this one too\n"


def test_a_manifest_naming_paths_out_of_the_project_is_refused(
    project: Path, outside: Path, tmp_path: Path
) -> None:
    snapshots = Snapshots(project, tmp_path / "store")
    sid, _ = snapshots.take()
    # a damaged (or forged) manifest: paths that climb out, absolute ones
    digest = snapshots.store.put(b"PWNED\n")
    evil = Entry(FILE, 0o644, 6, 0, 0, 0, data=digest)
    path = snapshots.store.snapshots / f"{sid}.json"
    body = json.loads(path.read_bytes())
    for name in ("../home/.ssh/id_rsa", f"{outside}/app.py", "src/../../x", "./a", "a//b"):
        body["set"][name] = list(evil)
    path.write_text(json.dumps(body))
    pending_plan, wanted, current = snapshots.plan(sid, turn=1, turns=1, redo=False)
    assert pending_plan.changes == ()
    assert {left.why for left in pending_plan.left} == {"not a plain path in the project"}
    # and applying such changes directly refuses each of them
    changes = [
        Change(name, action) for name in body["set"] if name != "src" for action in (CREATE,)
    ]
    done, failed = apply_changes(project, changes, wanted, current, snapshots.store)
    assert {f.path for f in failed} >= {"../home/.ssh/id_rsa", f"{outside}/app.py", "src/../../x"}
    assert (outside / "id_rsa").read_text() == "SECRET KEY\n"
    assert (outside / "app.py").read_text() == "the person's own\n"
    assert not (tmp_path / "x").exists()
    assert RESTORE and DELETE  # the other actions go through the same check


def test_a_damaged_copy_is_not_restored(project: Path, tmp_path: Path) -> None:
    snapshots = Snapshots(project, tmp_path / "store")
    sid, manifest = snapshots.take()
    digest = manifest["src/app.py"].data or ""
    (snapshots.store.objects / digest[:2] / digest[2:]).write_bytes(b"tampered")
    (project / "src" / "app.py").write_text("changed\n")
    pending, wanted, current = snapshots.plan(sid, turn=1, turns=1, redo=False)
    done = snapshots.apply(pending, wanted, current)
    assert [(f.path, f.why) for f in done.failed] == [
        ("src/app.py", "its copy in the snapshot is missing or damaged")
    ]
    assert (project / "src" / "app.py").read_text() == "changed\n"
