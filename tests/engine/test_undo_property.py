"""The property: whatever a turn's commands do to a tree (create, edit, delete, rename, change
permissions, make links and folders), /undo brings back a tree whose hash is the one before the
turn. 200 random scripts, each run by the real bash tool in a turn of a scripted model."""

from __future__ import annotations

import asyncio
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.engine import turn
from support.undo import bash_turns, tree_hash

NAMES = ["a", "b", "d/c", "d/e", "d/f/g", "h/i", "j"]
TEXT = st.text(alphabet="xyz\n", max_size=12)


def _ops() -> st.SearchStrategy[str]:
    name = st.sampled_from(NAMES)
    quoted = name.map(shlex.quote)
    create = st.tuples(name, TEXT).map(
        lambda t: f"mkdir -p $(dirname {t[0]}) && printf %s {shlex.quote(t[1])} > {t[0]}"
    )
    append = st.tuples(name, TEXT).map(lambda t: f"printf %s {shlex.quote(t[1])} >> {t[0]}")
    edit = quoted.map(lambda n: f"sed -i 's/x/yy/' {n}")
    delete = quoted.map(lambda n: f"rm -rf {n}")
    delete_folder = st.sampled_from(["d", "h", "d/f"]).map(lambda n: f"rm -rf {n}")
    rename = st.tuples(name, name).map(lambda t: f"mkdir -p $(dirname {t[1]}) && mv {t[0]} {t[1]}")
    rename_folder = st.sampled_from(["mv d h2", "mv h d/h", "mv d/f f2"])
    chmod = st.tuples(name, st.sampled_from(["600", "644", "755", "700", "444"])).map(
        lambda t: f"chmod {t[1]} {t[0]}"
    )
    chmod_folder = st.tuples(
        st.sampled_from(["d", "h", "d/f"]), st.sampled_from(["700", "755", "750"])
    ).map(lambda t: f"chmod {t[1]} {t[0]}")
    # Links out of the project lead to the test's own folder, never to a file of the machine:
    # the setup script runs unconfined, and chmod, `>` and touch follow a link (one to
    # /etc/passwd here once emptied the machine's, run as root).
    link = st.tuples(name, st.sampled_from(["a", "d", "../x", "../decoy"])).map(
        lambda t: f"ln -sfn {t[1]} {t[0]}"
    )
    touch = quoted.map(lambda n: f"touch -d '2001-01-01' {n}")
    return st.one_of(
        create, append, edit, delete, delete_folder, rename, rename_folder, chmod,
        chmod_folder, link, touch,
    )  # fmt: skip


def _script(ops: list[str]) -> str:
    return "".join(f"( {op} ) 2>/dev/null; " for op in ops) + "true"


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(setup=st.lists(_ops(), max_size=8), ops=st.lists(_ops(), min_size=1, max_size=10))
def test_undo_brings_back_the_tree_whatever_the_commands_did(
    setup: list[str], ops: list[str]
) -> None:
    folder = Path(tempfile.mkdtemp(prefix="mm-undo-"))
    try:
        project = folder / "project"
        project.mkdir()
        (folder / "decoy").write_text("outside the project\n")
        subprocess.run(["bash", "-c", _script(setup)], cwd=project, check=True)
        before = tree_hash(project)

        async def go() -> None:
            engine, _ = bash_turns(project, folder / "sessions", _script(ops))
            await turn(engine, "change things")
            pending = await engine.plan_undo()
            done = await engine.undo(pending, lambda e: None)
            assert done.failed == ()
            assert pending.plan.left == ()
            await engine.aclose()

        asyncio.run(go())
        assert tree_hash(project) == before, (setup, ops)
    finally:
        subprocess.run(["chmod", "-R", "u+rwx", str(folder)], check=False)
        shutil.rmtree(folder)
