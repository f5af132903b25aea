"""The read_file tool on real files: the rules and messages of its section of the reference
(docs/tools.md)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from mm_tui.config import Settings
from mm_tui.tools.args import ReadFileArgs
from mm_tui.tools.base import ToolContext
from mm_tui.tools.read_file import ReadFileTool, read_lines

TEXT = "one\ntwo\nthree\nfour\nfive\n"


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    (tmp_path / "f.txt").write_text(TEXT)
    return ToolContext(cwd=tmp_path, settings=Settings())


async def read(ctx: ToolContext, path: str = "f.txt", **kw):
    return await ReadFileTool().run(ReadFileArgs(path=path, **kw), ctx)


def test_declaration(ctx: ToolContext, tmp_path: Path) -> None:
    tool = ReadFileTool()
    args = ReadFileArgs(path="src/a.py")
    assert tool.name == "read_file"
    assert tool.kind == "read"
    assert tool.counter == "file_ops"
    assert tool.title(args) == "src/a.py"
    assert tool.display(args) == "📄 read_file: src/a.py"
    assert tool.needs_permission(args) is False
    assert tool.rejection() == "[read_file rejected by the user]"
    assert tool.locations(args, ctx) == (str(tmp_path / "src/a.py"),)
    props = tool.parameters()["properties"]
    assert set(props) == {"path", "start", "end", "numbered"}
    assert all(p["description"] for p in props.values())
    assert props["start"]["default"] == 0 and props["end"]["default"] == 0
    assert props["numbered"]["default"] is False
    assert tool.parameters()["required"] == ["path"]


async def test_whole_file_keeps_final_newline(ctx: ToolContext) -> None:
    result = await read(ctx)
    assert result.output == TEXT
    assert result.status == "ok"


async def test_file_without_final_newline(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "g.txt").write_text("a\nb")
    assert (await read(ctx, "g.txt")).output == "a\nb"


async def test_range_drops_final_newline_unless_end_of_file(ctx: ToolContext) -> None:
    assert (await read(ctx, start=2, end=3)).output == "two\nthree"
    assert (await read(ctx, start=4)).output == "four\nfive\n"
    assert (await read(ctx, end=2)).output == "one\ntwo"
    assert (await read(ctx, start=5, end=5)).output == "five\n"


async def test_end_beyond_the_file_reads_to_the_end(ctx: ToolContext) -> None:
    assert (await read(ctx, start=4, end=99)).output == "four\nfive\n"


async def test_negative_values_count_as_zero(ctx: ToolContext) -> None:
    assert (await read(ctx, start=-3, end=-1)).output == TEXT


async def test_numbered(ctx: ToolContext) -> None:
    result = await read(ctx, numbered=True)
    assert result.output == "1 │ one\n2 │ two\n3 │ three\n4 │ four\n5 │ five\n"
    assert (await read(ctx, start=2, end=3, numbered=True)).output == "2 │ two\n3 │ three"


async def test_numbered_right_aligned(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("".join(f"line{i}\n" for i in range(1, 121)))
    result = await read(ctx, "long.txt", start=8, end=11, numbered=True)
    assert result.output == " 8 │ line8\n 9 │ line9\n10 │ line10\n11 │ line11"
    result = await read(ctx, "long.txt", start=99, end=100, numbered=True)
    assert result.output == " 99 │ line99\n100 │ line100"


async def test_missing_file(ctx: ToolContext) -> None:
    result = await read(ctx, "nope/missing.go")
    assert result.output == "nope/missing.go does not exist. Create it with write_file"
    assert result.status == "error"


async def test_start_beyond_the_end(ctx: ToolContext) -> None:
    result = await read(ctx, start=9)
    assert result.output == "start line 9 is beyond the end of f.txt (5 lines)"
    assert result.status == "error"


async def test_end_before_start(ctx: ToolContext) -> None:
    result = await read(ctx, start=4, end=2)
    assert result.output == "end line 2 is before start line 4"
    assert result.status == "error"


async def test_directory(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    result = await read(ctx, "sub")
    assert result.output == "sub is a directory, not a file"
    assert result.status == "error"


async def test_binary_file(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    result = await read(ctx, "img.png")
    assert result.output == "img.png is a binary file (16 bytes); read_file reads text files only"
    assert result.status == "error"


async def test_not_utf8(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "latin1.txt").write_bytes("ok\nhé\n".encode("latin-1"))
    result = await read(ctx, "latin1.txt")
    assert result.output == (
        "latin1.txt is not UTF-8 text (invalid byte at line 2); read_file reads UTF-8 text only"
    )
    assert result.status == "error"


async def test_permission_denied(ctx: ToolContext, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("x")
    secret.chmod(0)
    try:
        if os.geteuid() == 0:
            output = read_as_nobody(tmp_path, "secret.txt")
        else:
            result = await read(ctx, "secret.txt")
            assert result.status == "error"
            output = result.output
    finally:
        secret.chmod(0o600)
    assert output == "secret.txt: permission denied"


def read_as_nobody(folder: Path, path: str) -> str:
    """Root reads anything: run the tool in a child process without the capabilities that let
    root ignore a file's mode."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and setpriv is missing: cannot be refused a read")
    script = (
        "import asyncio, sys; from pathlib import Path; from mm_tui.config import Settings; "
        "from mm_tui.tools.base import ToolContext; "
        "from mm_tui.tools.args import ReadFileArgs; from mm_tui.tools.read_file import ReadFileTool; "
        "ctx = ToolContext(cwd=Path(sys.argv[1]), settings=Settings()); "
        "r = asyncio.run(ReadFileTool().run(ReadFileArgs(path=sys.argv[2]), ctx)); "
        "print(r.status + ':' + r.output, end='')"
    )
    done = subprocess.run(
        [setpriv, "--bounding-set=-dac_override,-dac_read_search"]
        + [sys.executable, "-c", script, str(folder), path],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    status, _, output = done.stdout.partition(":")
    assert status == "error"
    return output


async def test_not_a_regular_file(ctx: ToolContext, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    result = await read(ctx, "pipe")
    assert result.output == "pipe is not a regular file (a device, socket or pipe)"


async def test_empty_file(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("")
    result = await read(ctx, "empty.txt")
    assert result.output == "empty.txt is empty"
    assert result.status == "ok"


async def test_absolute_path(ctx: ToolContext, tmp_path: Path) -> None:
    assert (await read(ctx, str(tmp_path / "f.txt"), end=1)).output == "one"


async def test_truncated_to_max_output(tmp_path: Path) -> None:
    ctx = ToolContext(cwd=tmp_path, settings=Settings(maxOutput=10))
    (tmp_path / "big.txt").write_text("x" * 25 + "\n")
    result = await read(ctx, "big.txt")
    assert result.output == "x" * 10 + "\n[... output truncated: 16 more characters ...]"


async def test_lines_split_on_newline_only(ctx: ToolContext, tmp_path: Path) -> None:
    # a form feed or a carriage return is not a line break for editors and grep -n
    (tmp_path / "odd.txt").write_text("a\fb\r\nc\u2028d\ne\n", newline="")
    result = await read(ctx, "odd.txt", start=2, end=2, numbered=True)
    assert result.output == "2 │ c\u2028d"


@given(
    lines=st.lists(st.text(alphabet="ab \t", max_size=5), min_size=1, max_size=20),
    final_newline=st.booleans(),
    data=st.data(),
)
async def test_any_range_is_a_slice_of_the_file(lines, final_newline, data, tmp_path_factory):
    assume(final_newline or lines[-1])  # otherwise the text would end with a newline after all
    folder = tmp_path_factory.mktemp("prop")
    text = "\n".join(lines) + ("\n" if final_newline else "")
    (folder / "p.txt").write_text(text)
    ctx = ToolContext(cwd=folder, settings=Settings())
    total = len(lines)
    start = data.draw(st.integers(1, total))
    end = data.draw(st.integers(start, total))
    result = await read(ctx, "p.txt", start=start, end=end)
    expected = "\n".join(lines[start - 1 : end])
    if end == total and final_newline:
        expected += "\n"
    assert result.output == expected


# -- a range of a large file is read as far as it goes, not whole ------------------------------


def old_read_file(data: bytes, path: str, start: int, end: int, numbered: bool, limit: int) -> str:
    """read_file as it was when it read a file whole: the oracle the streamed reading must
    give to the letter, for any file (these are small, so judged whole either way)."""
    if b"\0" in data:
        return f"{path} is a binary file ({len(data)} bytes); read_file reads text files only"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return (
            f"{path} is not UTF-8 text (invalid byte at line {line}); "
            "read_file reads UTF-8 text only"
        )
    if not text:
        return f"{path} is empty"
    lines = text.split("\n")
    final_newline = lines[-1] == ""
    if final_newline:
        lines.pop()
    total = len(lines)
    start = max(start, 0) or 1
    end = max(end, 0) or total
    if start > total:
        return f"start line {start} is beyond the end of {path} ({total} line{'s' * (total != 1)})"
    if end < start:
        return f"end line {end} is before start line {start}"
    end = min(end, total)
    shown = lines[start - 1 : end]
    if numbered:
        width = len(str(end))
        shown = [f"{start + i:>{width}} │ {line}" for i, line in enumerate(shown)]
    output = "\n".join(shown)
    if end == total and final_newline:
        output += "\n"
    if len(output) <= limit:
        return output
    return output[:limit] + f"\n[... output truncated: {len(output) - limit} more characters ...]"


@given(
    data=st.lists(
        st.sampled_from([b"a", b"\n", b"\n", "é".encode(), "中".encode(), "😀".encode(), b"\xff"])
        | st.sampled_from([b"\0", b"\xe4\xb8", b"\r\n", "\ufeff".encode()]),
        max_size=30,
    ).map(b"".join),
    start=st.integers(-1, 12),
    end=st.integers(-1, 12),
    numbered=st.booleans(),
    limit=st.integers(1, 40),
    block=st.integers(1, 9),
)
def test_streamed_reading_gives_what_a_whole_reading_gave(
    data: bytes,
    start: int,
    end: int,
    numbered: bool,
    limit: int,
    block: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # blocks of a few bytes: characters and ranges cut at every place by a block's end
    path = tmp_path_factory.mktemp("stream") / "p.txt"
    path.write_bytes(data)
    args = ReadFileArgs(path="p.txt", start=start, end=end, numbered=numbered)
    with path.open("rb") as f:
        result = read_lines(f, "p.txt", args, limit, block=block)
    assert result.output == old_read_file(data, "p.txt", start, end, numbered, limit)


GIB = 1 << 30


def sparse_tail(path: Path, head: bytes, size: int) -> None:
    """`head`, then a hole up to `size` bytes (NUL bytes, costing no disk)."""
    path.write_bytes(head)
    os.truncate(path, size)


async def test_line_one_of_a_huge_sparse_file_is_judged_on_its_first_block(
    ctx: ToolContext, tmp_path: Path
) -> None:
    sparse_tail(tmp_path / "disk.img", b"", 5 * GIB)
    result = await read(ctx, "disk.img", start=1, end=1)
    assert result.output == (
        f"disk.img is a binary file ({5 * GIB} bytes); read_file reads text files only"
    )


def big_text(path: Path, lines: int, size: int) -> None:
    """`lines` numbered lines of text (more than read_file judges whole), then a hole to `size`."""
    with path.open("wb") as f:
        for n in range(1, lines + 1):
            f.write(f"line {n} {'é' * 40}\n".encode())
    os.truncate(path, size)


async def test_a_range_of_a_huge_file_is_read_without_reading_the_rest(
    ctx: ToolContext, tmp_path: Path
) -> None:
    big_text(tmp_path / "huge.log", 200_000, 3 * GIB)  # 17 MiB of text, then NUL bytes
    result = await read(ctx, "huge.log", start=99_999, end=100_001, numbered=True)
    assert result.output == (
        f" 99999 │ line 99999 {'é' * 40}\n"
        f"100000 │ line 100000 {'é' * 40}\n"
        f"100001 │ line 100001 {'é' * 40}"
    )
    result = await read(ctx, "huge.log", end=2)
    assert result.output == f"line 1 {'é' * 40}\nline 2 {'é' * 40}"


async def test_whole_reading_of_a_large_file_is_truncated_with_the_exact_count(
    tmp_path: Path,
) -> None:
    ctx = ToolContext(cwd=tmp_path, settings=Settings(maxOutput=30))
    lines = [f"line {n} {'é' * 40}" for n in range(1, 300_001)]  # 15 MiB
    (tmp_path / "big.txt").write_text("\n".join(lines) + "\n")
    result = await read(ctx, "big.txt", start=2, numbered=True)
    numbered = "".join(f"{n:>6} │ {line}\n" for n, line in enumerate(lines, 1) if n >= 2)
    assert result.output == (
        numbered[:30] + f"\n[... output truncated: {len(numbered) - 30} more characters ...]"
    )


def test_line_one_of_a_two_gigabyte_file_takes_little_memory(tmp_path: Path) -> None:
    # in a child process, whose peak memory is its own: reading the file whole took 2 GB. Its
    # VmHWM, not ru_maxrss, which keeps the peak of the process that started it (Linux)
    if not Path("/proc/self/status").exists():
        pytest.skip("no /proc/self/status to read a process's peak memory from")
    big_text(tmp_path / "huge.log", 250_000, 2 * GIB)
    script = (
        "import asyncio, sys; from pathlib import Path; from mm_tui.config import "
        "Settings; from mm_tui.tools.base import ToolContext; from mm_tui.tools.args import "
        "ReadFileArgs; from mm_tui.tools.read_file import ReadFileTool; "
        "ctx = ToolContext(cwd=Path(sys.argv[1]), settings=Settings()); "
        "r = asyncio.run(ReadFileTool().run(ReadFileArgs(path='huge.log', end=1), ctx)); "
        "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]; "
        "print(peak.split()[1]); print(r.output)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    peak_kib, output = done.stdout.split("\n", 1)
    assert output == f"line 1 {'é' * 40}\n"
    assert int(peak_kib) < 200 * 1024
