"""The write_file tool on real files, and the diff helper it shares with edit_file."""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.env import clean_env
from support.waiting import wait_until

from mm_tui.config import Settings
from mm_tui.tools.args import WriteFileArgs
from mm_tui.tools.base import NothingToAsk, ToolContext
from mm_tui.tools.diff import compute_diff, count_lines, split_lines
from mm_tui.tools.write_file import WriteFileTool


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, settings=Settings())


async def write(ctx: ToolContext, path: str, content: str):
    return await WriteFileTool().run(WriteFileArgs(path=path, content=content), ctx)


def test_declaration(ctx: ToolContext, tmp_path: Path) -> None:
    tool = WriteFileTool()
    args = WriteFileArgs(path="a/b.txt", content="x")
    assert tool.name == "write_file"
    assert tool.kind == "edit"
    assert tool.counter == "file_ops"
    assert tool.title(args) == "a/b.txt"
    assert tool.display(args) == "📝 write_file: a/b.txt"
    assert tool.needs_permission(args) is True
    assert tool.rejection() == "[write_file rejected by the user]"
    assert tool.locations(args, ctx) == (str(tmp_path / "a/b.txt"),)
    params = tool.parameters()
    assert params["required"] == ["path", "content"]
    assert all(p["description"] for p in params["properties"].values())


async def test_create_with_parent_directories(ctx: ToolContext, tmp_path: Path) -> None:
    result = await write(ctx, "deep/er/new.txt", "one\ntwo\n")
    assert (tmp_path / "deep/er/new.txt").read_text() == "one\ntwo\n"
    assert result.status == "ok"
    assert (
        result.output == "created deep/er/new.txt (2 lines)\n@@ -0,0 +1,2 @@\n1 + │ one\n2 + │ two"
    )
    assert result.diff == "--- /dev/null\n+++ b/deep/er/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"


async def test_create_empty_file(ctx: ToolContext, tmp_path: Path) -> None:
    result = await write(ctx, "empty.txt", "")
    assert (tmp_path / "empty.txt").read_text() == ""
    assert result.output == "created empty.txt (0 lines)"
    assert result.diff == "--- /dev/null\n+++ b/empty.txt\n"
    one = await write(ctx, "one.txt", "only\n")
    assert one.output.startswith("created one.txt (1 line)\n")


async def test_existing_file_entirely_replaced(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("a\nb\nc\n")
    result = await write(ctx, "f.txt", "a\nB\nc\nd\n")
    assert (tmp_path / "f.txt").read_text() == "a\nB\nc\nd\n"
    assert result.output == (
        "wrote f.txt: +2 -1 lines\n@@ -1,3 +1,4 @@\n1   │ a\n2 - │ b\n2 + │ B\n3   │ c\n4 + │ d"
    )
    assert result.diff == ("--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n c\n+d\n")


async def test_identical_content_writes_nothing(ctx: ToolContext, tmp_path: Path) -> None:
    target = tmp_path / "same.txt"
    target.write_text("same\n")
    os.utime(target, (1_000_000, 1_000_000))
    result = await write(ctx, "same.txt", "same\n")
    assert result.output == "same.txt unchanged: the content is identical"
    assert result.status == "ok"
    assert result.diff is None
    assert target.stat().st_mtime == 1_000_000


async def test_mode_is_kept(ctx: ToolContext, tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o754)
    await write(ctx, "run.sh", "#!/bin/sh\necho new\n")
    assert script.stat().st_mode & 0o7777 == 0o754
    assert script.read_text() == "#!/bin/sh\necho new\n"


async def test_new_file_mode_follows_umask(ctx: ToolContext, tmp_path: Path) -> None:
    await write(ctx, "n.txt", "x")
    umask = os.umask(0o022)
    os.umask(umask)
    assert (tmp_path / "n.txt").stat().st_mode & 0o777 == 0o666 & ~umask


async def test_no_temporary_file_left(ctx: ToolContext, tmp_path: Path) -> None:
    await write(ctx, "f.txt", "1\n")
    await write(ctx, "f.txt", "2\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


async def test_symbolic_link_is_followed_and_kept(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("old\n")
    (tmp_path / "link.txt").symlink_to("real.txt")
    result = await write(ctx, "link.txt", "new\n")
    assert result.output.startswith("wrote link.txt: +1 -1 lines")
    assert (tmp_path / "link.txt").is_symlink()
    assert (tmp_path / "real.txt").read_text() == "new\n"


async def test_directory_is_refused(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    result = await write(ctx, "d", "x")
    assert result.output == "d is a directory, not a file"
    assert result.status == "error"


async def test_parent_is_a_file(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x")
    result = await write(ctx, "plain/child.txt", "x")
    assert result.status == "error"
    assert result.output.startswith("plain/child.txt: cannot write: ")


async def test_final_newline_change_is_shown(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("a\nb\n")
    result = await write(ctx, "f.txt", "a\nb")
    assert result.output == (
        "wrote f.txt: +1 -1 lines\n@@ -1,2 +1,2 @@\n1   │ a\n2 - │ b\n2 + │ b\n"
        "    \\ No newline at end of file"
    )
    assert result.diff.endswith("-b\n+b\n\\ No newline at end of file\n")


async def test_unicode_and_surrogates(ctx: ToolContext, tmp_path: Path) -> None:
    await write(ctx, "u.txt", "héllo €\n")
    assert (tmp_path / "u.txt").read_text(encoding="utf-8") == "héllo €\n"
    result = await write(ctx, "s.txt", "bad \ud800 char\n")
    assert result.status == "ok"
    assert (tmp_path / "s.txt").read_bytes() == b"bad ? char\n"


async def test_replacing_a_file_that_is_not_utf8(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "l.txt").write_bytes(b"caf\xe9\n")
    result = await write(ctx, "l.txt", "caf\ufffd\n")  # equal to the old text decoded, not in bytes
    assert result.status == "ok"
    assert (tmp_path / "l.txt").read_text() == "caf\ufffd\n"


async def test_permission_details(ctx: ToolContext, tmp_path: Path) -> None:
    tool = WriteFileTool()
    new = await tool.permission_details(WriteFileArgs(path="n.txt", content="x\n"), ctx)
    assert new == "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+x\n"
    (tmp_path / "o.txt").write_text("x\n")
    changed = await tool.permission_details(WriteFileArgs(path="o.txt", content="y\n"), ctx)
    assert changed == "--- a/o.txt\n+++ b/o.txt\n@@ -1 +1 @@\n-x\n+y\n"
    with pytest.raises(NothingToAsk):  # the same content: nothing to approve
        await tool.permission_details(WriteFileArgs(path="o.txt", content="x\n"), ctx)
    assert not (tmp_path / "n.txt").exists(), "asking never writes"


async def test_truncated_to_max_output(tmp_path: Path) -> None:
    ctx = ToolContext(cwd=tmp_path, settings=Settings(maxOutput=40))
    result = await write(ctx, "big.txt", "".join(f"{i}\n" for i in range(100)))
    assert result.output.startswith("created big.txt (100 lines)\n")
    assert "[... output truncated: " in result.output
    assert (tmp_path / "big.txt").read_text().count("\n") == 100


async def test_readers_never_see_half_a_file(ctx: ToolContext, tmp_path: Path) -> None:
    # A reader polling the file while it is rewritten sees the old or the new content, whole.
    target = tmp_path / "f.txt"
    old = ("o" * 4000 + "\n") * 1000
    new = ("n" * 4000 + "\n") * 1000
    target.write_text(old)
    seen: set[str] = set()
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            seen.add(target.read_text())

    reader = threading.Thread(target=poll)
    reader.start()
    try:
        for content in (new, old, new, old):
            await write(ctx, "f.txt", content)
    finally:
        stop.set()
        reader.join()
    assert seen <= {old, new}


# --- a kill in the middle of a write -------------------------------------------------------------

OLD = "old\n"
LINE = "new" * 10_000 + "\n"
NEW = LINE * 1000  # 30 MB: writing it takes a while
WRITERS = {
    # the tool, as mm runs it
    "write_file": (
        "import asyncio, sys; from pathlib import Path; from mm_tui.config import Settings; "
        "from mm_tui.tools.base import ToolContext; "
        "from mm_tui.tools.args import WriteFileArgs; from mm_tui.tools.write_file import WriteFileTool; "
        "ctx = ToolContext(cwd=Path(sys.argv[1]), settings=Settings()); "
        f"content = {LINE!r} * 1000; "
        "asyncio.run(WriteFileTool().run(WriteFileArgs(path='f.txt', content=content), ctx))"
    ),
    # what the test must catch: the file truncated, then written in place a line at a time
    "naive": (
        "import sys; from pathlib import Path\n"
        "with open(Path(sys.argv[1]) / 'f.txt', 'w') as f:\n"
        f"    for _ in range(1000): f.write({LINE!r})\n"
    ),
}


def killed_while_writing(folder: Path, writer: str) -> str:
    """Run `writer` on folder/f.txt (holding OLD), kill it -9 the moment its write has begun
    (its temporary file appears in the folder, or, for a writer without one, f.txt changes), and
    return what f.txt holds then."""
    folder.mkdir()
    target = folder / "f.txt"
    target.write_text(OLD)
    before = target.stat()

    def writing() -> bool:
        if os.listdir(folder) != ["f.txt"]:
            return True  # the temporary file of the write
        now = target.stat()
        return (now.st_ino, now.st_size, now.st_mtime_ns) != (
            before.st_ino,
            before.st_size,
            before.st_mtime_ns,
        )

    proc = subprocess.Popen(
        [sys.executable, "-c", WRITERS[writer], str(folder)],
        cwd=Path(__file__).resolve().parents[2],
        env=clean_env(folder),
    )
    try:
        assert wait_until(writing, 60, step=0.0005), "the writer never began"
    finally:
        proc.kill()
        proc.wait()
    return target.read_text()


def whole(content: str) -> bool:
    return content in (OLD, NEW)


@pytest.mark.parametrize(("writer", "atomic"), [("write_file", True), ("naive", False)])
def test_killed_while_writing_leaves_a_whole_file(
    tmp_path: Path, writer: str, atomic: bool
) -> None:
    """Killed in the middle of a write, write_file leaves the old content or the new, whole.
    The naive writer shows the check can fail: killed the same way, it leaves a torn file, and
    its case passes only when the check sees that (in one of the tries at least: a kill may
    land after the last line)."""
    contents = [killed_while_writing(tmp_path / f"run{n}", writer) for n in range(3)]
    torn = [len(c) for c in contents if not whole(c)]
    if atomic:
        assert not torn, f"torn files, of these many characters: {torn}"
        assert OLD in contents, "no kill landed before the write ended: nothing was tested"
    else:
        assert torn, "the check missed the naive writer's torn file"


# --- diff.py -------------------------------------------------------------------------------


def test_split_and_count_lines() -> None:
    assert split_lines("") == []
    assert split_lines("a\nb") == ["a\n", "b"]
    assert split_lines("a\n\n") == ["a\n", "\n"]
    assert split_lines("a\fb\r\n") == ["a\fb\r\n"]
    assert count_lines("a\nb") == 2 and count_lines("a\nb\n") == 2 and count_lines("") == 0


def test_numbered_diff_widths_and_hunks() -> None:
    old = "".join(f"l{i}\n" for i in range(1, 21))
    new = old.replace("l2\n", "L2\n").replace("l18\n", "")
    diff = compute_diff(old, new)
    assert (diff.added, diff.deleted) == (1, 2)
    assert diff.first_changed_line == 2
    assert diff.numbered() == (
        "@@ -1,5 +1,5 @@\n"
        " 1   │ l1\n 2 - │ l2\n 2 + │ L2\n 3   │ l3\n 4   │ l4\n 5   │ l5\n"
        "@@ -15,6 +15,5 @@\n"
        "15   │ l15\n16   │ l16\n17   │ l17\n18 - │ l18\n18   │ l19\n19   │ l20"
    )


def test_first_changed_line_of_a_pure_deletion() -> None:
    assert compute_diff("a\nb\nc\nd\n", "a\nb\nd\n").first_changed_line == 3
    assert compute_diff("a\n", "a\n").first_changed_line is None


def test_no_change_is_an_empty_diff() -> None:
    diff = compute_diff("x\n", "x\n")
    assert diff.empty and diff.unified("p") == "" and diff.numbered() == ""


lines_text = st.lists(st.sampled_from(["a", "b", "c", "d", ""]), max_size=12).map(
    lambda lines: "".join(line + "\n" for line in lines)
)


@given(old=lines_text, new=lines_text)
def test_unified_matches_difflib(old: str, new: str) -> None:
    ours = compute_diff(old, new).unified("f")
    theirs = "".join(
        difflib.unified_diff(
            old.splitlines(True), new.splitlines(True), "a/f", "b/f", lineterm="\n", n=3
        )
    )
    # difflib writes "--- a/f\n" with no date; our header is the same
    assert ours == theirs


@given(old=lines_text, new=lines_text)
def test_numbered_diff_numbers_are_real(old: str, new: str) -> None:
    diff = compute_diff(old, new)
    a, b = split_lines(old), split_lines(new)
    for hunk in diff.hunks:
        for line in hunk.lines:
            if line.old_no is not None:
                assert a[line.old_no - 1].rstrip("\n") == line.text
            if line.new_no is not None:
                assert b[line.new_no - 1].rstrip("\n") == line.text
    assert diff.added - diff.deleted == len(b) - len(a)


many_lines_text = st.lists(st.sampled_from(["a", "b", "", "}"]), min_size=200, max_size=400).map(
    lambda lines: "".join(line + "\n" for line in lines)
)


@settings(max_examples=30, deadline=None)
@given(old=many_lines_text, new=many_lines_text)
def test_long_repetitive_texts(old: str, new: str) -> None:
    # past 200 lines difflib's autojunk is active: the diff must still be right
    test_numbered_diff_numbers_are_real.hypothesis.inner_test(old, new)
    ours = compute_diff(old, new).unified("f")
    theirs = "".join(
        difflib.unified_diff(old.splitlines(True), new.splitlines(True), "a/f", "b/f", n=3)
    )
    assert ours == theirs


@pytest.mark.skipif(shutil.which("patch") is None, reason="needs patch(1)")
@settings(max_examples=40, deadline=None)
@given(old=lines_text | many_lines_text, new=lines_text | many_lines_text)
def test_unified_applies_with_patch(old: str, new: str, tmp_path_factory) -> None:
    folder = tmp_path_factory.mktemp("patch")
    (folder / "f").write_text(old)
    diff = compute_diff(old, new).unified("f")
    if not diff:
        return
    subprocess.run(["patch", "-s", "-p1"], input=diff, text=True, cwd=folder, check=True)
    assert (folder / "f").read_text() == new
