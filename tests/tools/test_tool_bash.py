"""The bash tool against real shells: the rules of the `bash` section of the reference
(docs/tools.md)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import tempfile
from pathlib import Path

import pytest
from support.processes import group_members, host_group, running, tool_groups
from support.waiting import await_until

from mm_tui.config import Settings
from mm_tui.tools.args import BashArgs
from mm_tui.tools.base import CANCELLED, ToolCancelled, ToolContext
from mm_tui.tools.bash import (
    SPILL_LIMIT,
    TOO_LARGE,
    BashTool,
    _utf8_head_end,
    _utf8_tail_start,
    read_back,
    release_middle,
)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, settings=Settings())


async def run(command: str, ctx: ToolContext, tool: BashTool | None = None):
    tool = tool or BashTool()
    return await tool.run(BashArgs(command=command), ctx)


async def wait_group_gone(pgid: int, within: float = 2.0) -> bool:
    return await await_until(lambda: not group_members(pgid), within)


async def sleeping(count: int = 1, seconds: str = "60") -> None:
    """Until the command runs `count` of its `sleep 60` (or of `seconds`): what it echoed before
    is written."""
    started = await await_until(lambda: len(running("sleep", seconds)) >= count)
    assert started, "the command never reached its sleep"


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# --- declaration and display -------------------------------------------------------------


def test_declaration_and_display() -> None:
    tool = BashTool()
    args = BashArgs(command="ls -la")
    assert tool.name == "bash"
    assert tool.kind == "execute"
    assert tool.counter == "commands"
    assert tool.title(args) == "ls -la"
    assert tool.display(args) == "🛠️  bash: ls -la"
    assert tool.needs_permission(args) is True
    assert tool.rejection() == "[command rejected by the user]"
    params = tool.parameters()
    assert params["required"] == ["command"]
    assert params["properties"]["command"]["description"]
    assert tool.declaration()["function"]["name"] == "bash"


async def test_permission_details_is_the_command(ctx: ToolContext) -> None:
    assert await BashTool().permission_details(BashArgs(command="rm -rf build"), ctx) == (
        "rm -rf build"
    )


def test_default_timeout_is_30s() -> None:
    tool = BashTool()
    assert tool.timeout == 30
    assert tool.timeout_marker() == "[error: 30s timeout exceeded]"
    assert "30s timeout" in tool.description()


# --- output ------------------------------------------------------------------------------


async def test_echo(ctx: ToolContext) -> None:
    result = await run("echo hello", ctx)
    assert result.output == "hello\n"
    assert result.status == "ok"


async def test_no_output(ctx: ToolContext) -> None:
    result = await run("true", ctx)
    assert result.output == ""
    assert result.status == "ok"


async def test_stderr_is_merged_in_order(ctx: ToolContext) -> None:
    result = await run("echo one; echo two >&2; echo three", ctx)
    assert result.output == "one\ntwo\nthree\n"


async def test_non_zero_exit(ctx: ToolContext) -> None:
    result = await run("echo out; exit 3", ctx)
    assert result.output == "out\n[exit code: exit status 3]"
    assert result.status == "error"


async def test_non_zero_exit_without_final_newline(ctx: ToolContext) -> None:
    result = await run("printf partial; false", ctx)
    assert result.output == "partial\n[exit code: exit status 1]"


async def test_non_zero_exit_without_output(ctx: ToolContext) -> None:
    result = await run("exit 42", ctx)
    assert result.output == "[exit code: exit status 42]"


async def test_shell_killed_by_a_signal(ctx: ToolContext) -> None:
    result = await run("echo before; kill -9 $$", ctx)
    assert result.output == "before\n[exit code: signal: killed]"
    assert result.status == "error"


async def test_cwd_is_honoured(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "marker.txt").write_text("x")
    result = await run("pwd; ls", ctx)
    pwd, listing = result.output.splitlines()
    assert Path(pwd).resolve() == tmp_path.resolve()
    assert listing == "marker.txt"


async def test_a_new_shell_per_call(ctx: ToolContext, tmp_path: Path) -> None:
    await run("cd /; export MM_TEST_VAR=1", ctx)
    result = await run('pwd; echo "[$MM_TEST_VAR]"', ctx)
    assert result.output.splitlines() == [str(tmp_path), "[]"]


async def test_no_stdin(ctx: ToolContext) -> None:
    # with a stdin that stays open, cat would wait on it until the call's timeout
    result = await run("cat; read line; echo read=$?", ctx)
    assert result.output == "read=1\n"


async def test_environment_keeps_programs_non_interactive(ctx: ToolContext) -> None:
    result = await run('echo "$GIT_TERMINAL_PROMPT $PAGER $GIT_PAGER $EDITOR $HOME"', ctx)
    assert result.output == f"0 cat cat true {os.environ['HOME']}\n"


async def test_invalid_utf8_gives_valid_text(ctx: ToolContext) -> None:
    result = await run(r"printf 'ok \xff\xfe end\n'", ctx)
    assert result.output == "ok \ufffd\ufffd end\n"
    result.output.encode("utf-8")  # valid text: encodes without error


async def test_max_output_truncation(tmp_path: Path) -> None:
    ctx = ToolContext(cwd=tmp_path, settings=Settings(maxOutput=100))
    result = await run("seq 1 1000; exit 2", ctx)
    text = "".join(f"{i}\n" for i in range(1, 1001))
    assert result.output.startswith(text[:100])
    assert f"[... output truncated: {len(text) - 100} more characters ...]" in result.output
    assert result.output.endswith("\n[exit code: exit status 2]")


# --- very large output -------------------------------------------------------------------


async def test_large_output_is_read_from_both_ends(tmp_path: Path) -> None:
    ctx = ToolContext(cwd=tmp_path, settings=Settings(maxOutput=10_000_000))
    result = await run(
        "printf 'START\\n'; head -c 3145728 /dev/zero | tr '\\0' x; printf '\\nEND\\n'", ctx
    )
    out = result.output
    assert out.startswith("START\nxxx")
    assert out.endswith("xxx\nEND\n")
    assert f"\n{TOO_LARGE}\n" in out
    assert out.count(TOO_LARGE) == 1
    head, tail = out.split(f"\n{TOO_LARGE}\n")
    assert len(head) == 1024 * 1024
    assert len(tail) == 1024 * 1024
    assert result.status == "ok"


async def test_large_output_then_max_output(ctx: ToolContext) -> None:
    result = await run("head -c 3145728 /dev/zero | tr '\\0' y", ctx)
    assert result.output.startswith("y" * 30000 + "\n[... output truncated: ")


async def test_large_output_does_not_split_multibyte_characters(tmp_path: Path) -> None:
    # "ab" then three-byte characters: both 1 MiB seams fall inside a character.
    ctx = ToolContext(cwd=tmp_path, settings=Settings(maxOutput=10_000_000))
    script = "import sys; sys.stdout.buffer.write(b'ab' + '€'.encode() * 1_100_000)"
    result = await run(f'{sys.executable} -c "{script}"', ctx)
    assert TOO_LARGE in result.output
    assert "\ufffd" not in result.output
    head, tail = result.output.split(f"\n{TOO_LARGE}\n")
    assert head.startswith("ab€") and set(head[2:]) == {"€"}
    assert set(tail) == {"€"}


def test_utf8_seams() -> None:
    euro = "€".encode()
    assert _utf8_head_end(b"a" + euro) == 4
    assert _utf8_head_end(b"a" + euro[:2]) == 1
    assert _utf8_head_end(b"a" + euro[:1]) == 1
    assert _utf8_head_end(b"abc") == 3
    assert _utf8_head_end(b"") == 0
    assert _utf8_tail_start(euro[1:] + b"z") == 2
    assert _utf8_tail_start(euro + b"z") == 0
    assert _utf8_tail_start(b"") == 0


# --- background jobs, timeout, cancellation ----------------------------------------------


# An hour's job: a call that waited for it would never return (pytest's timeout ends the test).
@pytest.mark.parametrize("command", ["sleep 3600 &", "nohup sleep 3600 >/dev/null 2>&1 &"])
async def test_background_job_returns_at_once(ctx: ToolContext, command: str) -> None:
    result = await run(f"{command} echo pgid=$$", ctx)
    pgid = host_group(int(result.output.strip().removeprefix("pgid=")))
    try:
        assert result.status == "ok"
        assert group_members(pgid), "the job keeps running: that is usually the point"
    finally:
        kill_group(pgid)


async def test_background_job_output_does_not_block(ctx: ToolContext) -> None:
    """The call ends with its shell: a job it left running (holding the output pipe) is not
    waited for, so what the job writes later is not in the result."""
    result = await run("(sleep 5; echo late) & echo pgid=$$; echo now", ctx)
    lines = result.output.splitlines()
    assert lines[1:] == ["now"]
    kill_group(host_group(int(lines[0].removeprefix("pgid="))))


async def running_groups() -> list[int]:
    """The process groups of the command under way, as this process numbers them (a shell's
    `$$` is another number where the launcher has a PID namespace of its own), with the jobs
    each holds."""
    await await_until(lambda: any(len(group_members(g)) > 1 for g in tool_groups()), 30)
    groups = [g for g in tool_groups() if len(group_members(g)) > 1]
    assert groups, "the command's shell and its jobs run"
    return groups


async def all_gone(groups: list[int]) -> bool:
    for group in groups:
        if not await wait_group_gone(group):
            return False
    return True


async def test_timeout(ctx: ToolContext) -> None:
    tool = BashTool(timeout=3)
    task = asyncio.create_task(run("echo before; sleep 60 & echo pgid=$$; wait", ctx, tool))
    groups = await running_groups()
    result = await task
    assert result.output.startswith("before\npgid=")
    assert result.output.endswith("\n[error: 3s timeout exceeded]")
    assert result.status == "error"
    assert await all_gone(groups), "the timeout kills the whole group"


async def test_timeout_without_output(ctx: ToolContext) -> None:
    result = await run("sleep 60", ctx, BashTool(timeout=0.5))
    assert result.output == "[error: 0.5s timeout exceeded]"


async def test_cancellation_kills_the_whole_group(ctx: ToolContext) -> None:
    task = asyncio.create_task(run("echo started; echo pgid=$$; sleep 60 & sleep 60 & wait", ctx))
    groups = await running_groups()
    task.cancel()
    with pytest.raises(ToolCancelled) as caught:
        await task
    output = caught.value.output
    assert output.endswith("\n" + CANCELLED)
    assert output.endswith("[error: cancelled]")
    assert output.startswith("started\npgid=")
    assert await all_gone(groups), "cancelling kills the shell and its jobs"


async def test_cancellation_kills_jobs_that_ignore_sigterm(ctx: ToolContext) -> None:
    # sleeps of an hour: a cancel that left them to their end would never return
    command = "trap '' TERM; echo pgid=$$; sleep 3600 & sleep 3600; wait"
    task = asyncio.create_task(run(command, ctx))
    groups = await running_groups()
    await sleeping(2, "3600")  # the trap is set before the jobs start: they are there
    task.cancel()
    with pytest.raises(ToolCancelled) as caught:
        await task
    assert caught.value.output.startswith("pgid=")
    assert await all_gone(groups)


async def test_cancellation_without_output(ctx: ToolContext) -> None:
    task = asyncio.create_task(run("sleep 60", ctx))
    await sleeping()
    task.cancel()
    with pytest.raises(ToolCancelled) as caught:
        await task
    assert caught.value.output == "[error: cancelled]"


@pytest.mark.parametrize("unlinked_file", ["O_TMPFILE", "named then unlinked"])
async def test_no_temporary_file_is_left(
    ctx: ToolContext, tmp_path: Path, monkeypatch, unlinked_file: str
) -> None:
    """Nor a descriptor: on Linux the output file has no name (O_TMPFILE); where that is not
    there (another system), it is named and unlinked at once."""
    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    if unlinked_file != "O_TMPFILE":
        monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    await run("true", ctx)  # the launcher is up: its descriptors are not the call's
    before = sorted(os.listdir("/proc/self/fd"))
    assert (await run("echo x", ctx)).output == "x\n"
    assert (await run("echo y; exit 1", ctx)).output == "y\n[exit code: exit status 1]"
    assert list(spool.iterdir()) == []
    assert sorted(os.listdir("/proc/self/fd")) == before


async def test_missing_working_directory_is_an_error_not_a_crash(tmp_path: Path) -> None:
    ctx = ToolContext(cwd=tmp_path / "gone", settings=Settings())
    result = await run("true", ctx)
    assert result.status == "error"
    assert result.output.startswith("[error: cannot run bash:")


# --- runaway output ------------------------------------------------------------------------


def test_release_middle_keeps_both_ends_and_frees_the_rest() -> None:
    with tempfile.TemporaryFile(buffering=0) as f:
        fd = f.fileno()
        chunk = b"m" * (1024 * 1024)
        f.write(b"HEAD\n")
        for _ in range(SPILL_LIMIT // len(chunk) + 8):
            f.write(chunk)
        f.write(b"\nTAIL\n")
        size = os.fstat(fd).st_size
        release_middle(fd)
        st = os.fstat(fd)
        assert st.st_size == size, "the file keeps its size"
        assert st.st_blocks * 512 < 8 * 1024 * 1024, "the middle went back to the disk"
        text = read_back(fd)
    assert text.startswith("HEAD\nmmm")
    assert text.endswith("mmm\nTAIL\n")
    assert TOO_LARGE in text
    assert "\0" not in text


def test_small_output_is_left_alone() -> None:
    with tempfile.TemporaryFile(buffering=0) as f:
        f.write(b"x" * 1000)
        release_middle(f.fileno())
        assert read_back(f.fileno()) == "x" * 1000


def deleted_files_usage() -> tuple[int, int]:
    """The largest size and the largest disk allocation among this process's deleted files."""
    size = used = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if "(deleted)" not in os.readlink(f"/proc/self/fd/{fd}"):
                continue
            st = os.stat(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        size = max(size, st.st_size)
        used = max(used, st.st_blocks * 512)
    return size, used


async def test_runaway_output_does_not_fill_the_disk(tmp_path: Path) -> None:
    """The spill file's middle goes back to the disk while the command runs: at some look the
    file holds far less than its size (without the holes it holds all of it at every look). How
    often the holes are punched depends on the loop's turn: not how much is left between two."""
    ctx = ToolContext(cwd=tmp_path, settings=Settings(maxOutput=10_000_000))
    looks: list[tuple[int, int]] = []
    task = asyncio.create_task(run("yes", ctx, BashTool(timeout=1)))
    while not task.done():
        looks.append(deleted_files_usage())
        await asyncio.sleep(0.02)
    result = task.result()
    head, tail = result.output.split(f"\n{TOO_LARGE}\n")
    assert set(head) == {"y", "\n"}, "the head is intact, no hole read back"
    assert tail.endswith("\n[error: 1s timeout exceeded]")
    assert set(tail.removesuffix("\n[error: 1s timeout exceeded]")) <= {"y", "\n"}
    peak_size = max(size for size, _ in looks)
    if peak_size < 4 * SPILL_LIMIT:
        pytest.skip(f"yes wrote only {peak_size} bytes: too slow a machine to tell")
    given_back = [size - used for size, used in looks]
    assert max(given_back) > SPILL_LIMIT, "without the holes the whole output would stay on disk"
