"""Project instructions: which AGENTS.md files are read and in what order, the
size cap, the files that cannot be read, the system prompt they join, the start-up note, /new,
/help, and `mm -p` end to end. Real folders and files throughout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.engine import turn
from support.program import mm
from support.scripted_server import ScriptedServer
from support.waiting import until
from support.window_helpers import settle, started_app

from mm_tui.config import Settings
from mm_tui.engine.instructions import CUT_MARK, LIMIT, load_instructions
from mm_tui.engine.journal import flush_all
from mm_tui.engine.session import Session
from mm_tui.startup import new_session_like, start
from mm_tui.window.screens.help import HelpScreen
from mm_tui.window.transcript.store import NoticeItem


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The person's home, with no XDG_CONFIG_HOME: their file is ~/.config/mm/AGENTS.md."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME")
    return home


@pytest.fixture
def repo(tmp_path: Path, home: Path) -> Path:
    """A repository with instructions at its root, a CLAUDE.md alone in pkg/, and both names in
    pkg/sub/ (the working folder); a folder above the repository has an AGENTS.md too."""
    write(tmp_path / "outer" / "AGENTS.md", "outside the repository")
    root = tmp_path / "outer" / "repo"
    (root / ".git").mkdir(parents=True)
    write(root / "AGENTS.md", "root rules")
    write(root / "pkg" / "CLAUDE.md", "pkg rules (CLAUDE.md)")
    write(root / "pkg" / "sub" / "AGENTS.md", "sub rules")
    write(root / "pkg" / "sub" / "CLAUDE.md", "not read: this folder has an AGENTS.md")
    write(home / ".config" / "mm" / "AGENTS.md", "my own rules")
    return root


# --- which files ---------------------------------------------------------------------------------


def test_from_the_person_s_file_down_to_the_working_folder(repo: Path) -> None:
    read = load_instructions(repo / "pkg" / "sub")
    assert [(f.shown, f.text) for f in read.files] == [
        ("~/.config/mm/AGENTS.md", "my own rules"),
        ("../../AGENTS.md", "root rules"),
        ("../CLAUDE.md", "pkg rules (CLAUDE.md)"),
        ("AGENTS.md", "sub rules"),
    ]
    assert read.warnings == ()
    assert read.note() == (
        "project instructions: ~/.config/mm/AGENTS.md, ../../AGENTS.md, ../CLAUDE.md, AGENTS.md"
    )


def test_without_a_repository_only_the_working_folder(tmp_path: Path, home: Path) -> None:
    write(tmp_path / "AGENTS.md", "the parent's")
    work = tmp_path / "work"
    write(work / "AGENTS.md", "here")
    assert [f.text for f in load_instructions(work).files] == ["here"]


def test_a_git_file_marks_the_root_too(tmp_path: Path, home: Path) -> None:
    """A worktree or a submodule has a `.git` file, not a folder."""
    write(tmp_path / "AGENTS.md", "above the worktree")
    write(tmp_path / "tree" / ".git", "gitdir: /elsewhere/.git/worktrees/tree\n")
    write(tmp_path / "tree" / "AGENTS.md", "the worktree's")
    assert [f.text for f in load_instructions(tmp_path / "tree" / "src").files] == [
        "the worktree's"
    ]


def test_xdg_config_home_names_the_person_s_folder(tmp_path: Path, home: Path) -> None:
    write(home / ".config" / "mm" / "AGENTS.md", "the default place")
    write(tmp_path / "xdg" / "mm" / "AGENTS.md", "the XDG place")
    work = tmp_path / "work"
    work.mkdir()
    read = load_instructions(work, environ={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert [(f.shown, f.text) for f in read.files] == [
        (str(tmp_path / "xdg" / "mm" / "AGENTS.md"), "the XDG place")
    ]
    # a relative XDG_CONFIG_HOME is not one (the XDG rule): the default place
    read = load_instructions(work, environ={"XDG_CONFIG_HOME": "xdg"})
    assert [f.text for f in read.files] == ["the default place"]


def test_a_bom_is_dropped_and_a_blank_file_is_no_instruction(tmp_path: Path, home: Path) -> None:
    write(tmp_path / "AGENTS.md", b"\xef\xbb\xbfwith a BOM\n")
    write(home / ".config" / "mm" / "AGENTS.md", "  \n\n")
    read = load_instructions(tmp_path)
    assert [(f.shown, f.text) for f in read.files] == [("AGENTS.md", "with a BOM\n")]


# --- what cannot be read -------------------------------------------------------------------------


def test_files_that_cannot_be_read_cost_a_warning_each(repo: Path, home: Path) -> None:
    write(repo / "AGENTS.md", "good line\n\xff bad byte\n".encode("latin-1"))
    (repo / "pkg" / "sub" / "AGENTS.md").unlink()
    (repo / "pkg" / "sub" / "AGENTS.md").mkdir()  # its CLAUDE.md is not read instead
    (home / ".config" / "mm" / "AGENTS.md").unlink()
    (home / ".config" / "mm" / "AGENTS.md").symlink_to(home / "nowhere.md")
    os.mkfifo(repo / "pkg" / "AGENTS.md")  # a pipe: opening it must not wait for a writer
    read = load_instructions(repo / "pkg" / "sub")
    assert read.files == ()
    assert read.warnings == (
        "[warning: ~/.config/mm/AGENTS.md cannot be read (No such file or directory) — skipped]",
        "[warning: ../../AGENTS.md is not UTF-8 text (line 2, byte 0xff) — skipped]",
        "[warning: ../AGENTS.md is not a regular file — skipped]",
        "[warning: AGENTS.md is a folder, not a file — skipped]",
    )


# --- the size cap --------------------------------------------------------------------------------


def test_the_nearest_files_come_first_within_32_kib(repo: Path) -> None:
    line = "x" * 99 + "\n"  # 100 bytes a line
    write(repo / "pkg" / "sub" / "AGENTS.md", line * 200)  # 20,000 bytes: whole
    write(repo / "pkg" / "CLAUDE.md", line * 200)  # 20,000: cut to what is left
    read = load_instructions(repo / "pkg" / "sub")
    assert [f.shown for f in read.files] == ["../CLAUDE.md", "AGENTS.md"]
    cut, whole = read.files
    assert whole.text == line * 200 and not whole.cut
    assert cut.cut and cut.text.endswith("x\n" + CUT_MARK)  # at a line's end, then the mark
    total = sum(len(f.text.encode()) for f in read.files)
    assert LIMIT - 1024 < total <= LIMIT
    assert read.warnings == (
        "[warning: ../CLAUDE.md cut: project instructions take at most 32 KiB in all]",
        "[warning: ../../AGENTS.md left out: project instructions take at most 32 KiB in all]",
        "[warning: ~/.config/mm/AGENTS.md left out: project instructions take at most 32 KiB in "
        "all]",
    )
    rows = dict(read.listing())
    assert rows["../CLAUDE.md"].endswith("of 19.5 KiB, cut") and rows["AGENTS.md"] == "19.5 KiB"


def test_a_huge_file_is_cut_without_reading_it_all(tmp_path: Path, home: Path) -> None:
    write(tmp_path / "AGENTS.md", "é" * (8 * 1024 * 1024))  # 16 MiB, no line end
    read = load_instructions(tmp_path)
    (file,) = read.files
    assert file.cut and file.size == 16 * 1024 * 1024
    assert file.text.startswith("éé") and file.text.endswith("é\n" + CUT_MARK)
    assert len(file.text.encode()) <= LIMIT


# --- the system prompt, the notes, /new ----------------------------------------------------------


async def test_start_up_appends_them_to_the_configured_prompt_and_says_so(repo: Path) -> None:
    with ScriptedServer() as server:
        server.script("ok")
        settings = Settings(
            baseUrl=server.base_url,
            model="m",
            systemPrompt="You are terse.",
            sessionsDir=str(repo / ".mm" / "sessions"),
        )
        started = await start(settings, repo / "pkg" / "sub")
        await turn(started.engine, "hi")
        await started.engine.aclose()
        system = server.requests[0].messages[0]
    assert system["role"] == "system"
    content = system["content"]
    assert content.startswith("You are terse.\n\n# Project instructions\n")
    order = ["my own rules", "root rules", "pkg rules (CLAUDE.md)", "sub rules"]
    at = [content.index(text) for text in order]
    assert at == sorted(at)
    assert "## ../CLAUDE.md\n\npkg rules (CLAUDE.md)" in content
    assert "not read" not in content and "outside the repository" not in content
    note = "project instructions: ~/.config/mm/AGENTS.md, ../../AGENTS.md, ../CLAUDE.md, AGENTS.md"
    assert started.notes.count(note) == 1 and started.warnings == []


async def test_start_up_warns_about_a_file_it_skipped(tmp_path: Path, home: Path) -> None:
    write(tmp_path / "AGENTS.md", b"\xfe\xff")
    started = await start(Settings(sessionsDir=str(tmp_path / "s")), tmp_path, presets=())
    warning = "[warning: AGENTS.md is not UTF-8 text (line 1, byte 0xfe) — skipped]"
    assert warning in started.warnings and warning in started.notes
    assert "# Project instructions" not in started.engine.system_prompt()
    await started.engine.aclose()


async def test_new_reads_them_again_and_a_reopened_session_keeps_its_own(repo: Path) -> None:
    work = repo / "pkg" / "sub"
    started = await start(Settings(sessionsDir=str(repo / "s")), work, presets=())
    engine = started.engine
    first = engine.session
    assert "sub rules" in first.messages[0]["content"]
    await turn(engine, "hi")  # on the demo model: the session has a journal
    write(work / "AGENTS.md", "sub rules, edited")
    engine.new_session(new_session_like(engine))  # what /new does
    assert "sub rules, edited" in engine.session.messages[0]["content"]
    assert [f.text for f in engine.instructions.files][-1] == "sub rules, edited"
    flush_all()
    engine.new_session(Session.load(first.folder, first.id))  # /sessions, --resume
    assert "sub rules, edited" not in engine.session.messages[0]["content"]
    await engine.aclose()


# --- the window: the note at start-up, /help ------------------------------------------------------


async def test_the_window_lists_them_at_start_up_and_in_help(repo: Path) -> None:
    work = repo / "pkg" / "sub"
    write(repo / "pkg" / "CLAUDE.md", b"\xff")
    with ScriptedServer() as server:
        app = started_app(server.base_url, work)
        async with app.run_test(size=(110, 40)) as pilot:
            await settle(pilot, app)
            notices = [
                (item.level, item.text)
                for item in app.main.transcript.items
                if isinstance(item, NoticeItem)
            ]
            note = "project instructions: ~/.config/mm/AGENTS.md, ../../AGENTS.md, AGENTS.md"
            warning = "[warning: ../CLAUDE.md is not UTF-8 text (line 1, byte 0xff) — skipped]"
            assert notices.count(("info", note)) == 1
            assert notices.count(("warning", warning)) == 1
            await pilot.press(*"/help", "enter")
            await until(lambda: isinstance(app.screen, HelpScreen), "the help screen", pilot=pilot)
            table = app.screen._content()
            paths = [str(cell) for cell in table.columns[0]._cells]
            whats = [str(cell) for cell in table.columns[1]._cells]
            rows = list(zip(paths, whats, strict=True))
            assert ("AGENTS.md", "9 bytes") in rows
            assert ("~/.config/mm/AGENTS.md", "12 bytes") in rows
            assert ("", warning) in rows


# --- end to end -----------------------------------------------------------------------------------


def test_mm_p_sends_them_and_notes_them(repo: Path, home: Path) -> None:
    """The real mm in the working folder pkg/sub, HOME the test's."""
    with ScriptedServer() as server:
        server.script("ok")
        env = {"MM_BASE_URL": server.base_url, "MM_MODEL": "m"}
        result = mm("-p", "hi", cwd=repo / "pkg" / "sub", home=home, env=env)
        assert result.returncode == 0, result.stderr
        content = server.requests[0].messages[0]["content"]
    assert content.startswith("You are mm, a coding agent")
    for text in ("my own rules", "root rules", "pkg rules (CLAUDE.md)", "sub rules"):
        assert text in content
    assert (
        "mm: project instructions: ~/.config/mm/AGENTS.md, ../../AGENTS.md, ../CLAUDE.md, "
        "AGENTS.md" in result.stderr.splitlines()
    )
