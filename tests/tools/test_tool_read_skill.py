"""The read_skill tool and skill discovery on a real skills folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from mm_tui.config import Settings
from mm_tui.core.flat_yaml import read_flat_yaml
from mm_tui.tools.args import ReadSkillArgs
from mm_tui.tools.base import ToolContext
from mm_tui.tools.read_skill import (
    INTRO,
    ReadSkillTool,
    Skill,
    describe,
    discover_skills,
    find_skills,
)

DEPLOY = """---
name: deploy
description: Ship the service to production, safely.
---
# Deploy

Run `make deploy`.
"""


@pytest.fixture
def skills_dir(tmp_path: Path) -> Path:
    folder = tmp_path / ".mm" / "skills"
    folder.mkdir(parents=True)
    (folder / "deploy.md").write_text(DEPLOY)
    (folder / "review").mkdir()
    (folder / "review" / "SKILL.md").write_text("\n\n# Review a pull request\n\nRead the diff.\n")
    (folder / "commit.md").write_text("Write a commit message\nin the imperative.\n")
    return folder


@pytest.fixture
def ctx(tmp_path: Path, skills_dir: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, settings=Settings())


@pytest.fixture
def tool(skills_dir: Path) -> ReadSkillTool:
    return ReadSkillTool(discover_skills(skills_dir))


async def read(tool: ReadSkillTool, ctx: ToolContext, name: str):
    return await tool.run(ReadSkillArgs(name=name), ctx)


def test_discovery(skills_dir: Path) -> None:
    skills = discover_skills(skills_dir)
    assert list(skills) == ["commit", "deploy", "review"]
    assert skills["deploy"] == Skill(
        "deploy", skills_dir / "deploy.md", "Ship the service to production, safely."
    )
    assert skills["review"].path == skills_dir / "review" / "SKILL.md"
    assert skills["review"].description == "Review a pull request"
    assert skills["commit"].description == "Write a commit message"


def test_flat_file_wins_over_folder(skills_dir: Path) -> None:
    (skills_dir / "deploy").mkdir()
    (skills_dir / "deploy" / "SKILL.md").write_text("description: the folder one\n")
    assert discover_skills(skills_dir)["deploy"].path == skills_dir / "deploy.md"


def test_folder_without_skill_md_and_other_files_are_ignored(skills_dir: Path) -> None:
    (skills_dir / "notes").mkdir()
    (skills_dir / "notes" / "README.md").write_text("x")
    (skills_dir / "script.sh").write_text("x")
    (skills_dir / ".hidden.md").write_text("x")
    assert list(discover_skills(skills_dir)) == ["commit", "deploy", "review"]


def test_links_inside_are_followed_links_out_and_loops_refused(
    skills_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "secret.md").write_text("secret")
    (skills_dir / "alias.md").symlink_to("deploy.md")
    (skills_dir / "shared").symlink_to("review")
    (skills_dir / "out.md").symlink_to(tmp_path / "elsewhere" / "secret.md")
    (skills_dir / "outdir").symlink_to(tmp_path / "elsewhere")
    (skills_dir / "loop.md").symlink_to("loop.md")
    (skills_dir / "notes.txt").symlink_to(tmp_path / "elsewhere" / "secret.md")  # no skill
    (tmp_path / "elsewhere" / "SKILL.md").write_text("secret")
    skills, refused = find_skills(skills_dir)
    assert list(skills) == ["alias", "commit", "deploy", "review", "shared"]
    assert refused == {
        "loop": "loop.md is a symbolic link loop",
        "out": "out.md is a symbolic link that leads out of the skills folder",
        "outdir": "outdir is a symbolic link that leads out of the skills folder",
    }
    # The skills folder itself may be a link: the person chose where it lives.
    (tmp_path / "linked").symlink_to(skills_dir)
    assert list(discover_skills(tmp_path / "linked")) == list(skills)


def test_no_skills(tmp_path: Path) -> None:
    assert discover_skills(tmp_path / "missing") == {}
    (tmp_path / "empty").mkdir()
    assert discover_skills(tmp_path / "empty") == {}
    assert ReadSkillTool.discover(tmp_path, Settings(skillsDir="empty")) is None


def test_discover_from_settings(tmp_path: Path, skills_dir: Path) -> None:
    tool = ReadSkillTool.discover(tmp_path, Settings())
    assert tool is not None and list(tool.skills) == ["commit", "deploy", "review"]
    other = ReadSkillTool.discover(tmp_path, Settings(skillsDir=str(skills_dir)))
    assert other is not None and list(other.skills) == ["commit", "deploy", "review"]


def test_declaration(tool: ReadSkillTool, ctx: ToolContext, skills_dir: Path) -> None:
    args = ReadSkillArgs(name="deploy")
    assert tool.name == "read_skill"
    assert tool.kind == "read"
    assert tool.counter == "skills"
    assert tool.title(args) == "deploy"
    assert tool.display(args) == "📖 read_skill: deploy"
    assert tool.needs_permission(args) is False
    assert tool.rejection() == "[read_skill rejected by the user]"
    assert tool.locations(args, ctx) == (str(skills_dir / "deploy.md"),)
    params = tool.parameters()
    assert params["required"] == ["name"]
    assert params["properties"]["name"]["description"]


def test_description_is_sentence_then_sorted_catalogue(tool: ReadSkillTool) -> None:
    assert tool.description() == (
        f"{INTRO}\n"
        "  commit — Write a commit message\n"
        "  deploy — Ship the service to production, safely.\n"
        "  review — Review a pull request"
    )


async def test_output_is_the_full_markdown(tool: ReadSkillTool, ctx: ToolContext) -> None:
    result = await read(tool, ctx, "deploy")
    assert result.output == DEPLOY
    assert result.status == "ok"
    result = await read(tool, ctx, "review")
    assert result.output == "\n\n# Review a pull request\n\nRead the diff.\n"


async def test_unknown_name(tool: ReadSkillTool, ctx: ToolContext) -> None:
    result = await read(tool, ctx, "x")
    assert result.output == 'No skill named "x". Available skills: commit, deploy, review'
    assert result.status == "error"


async def test_only_the_base_name_is_used(
    tool: ReadSkillTool, ctx: ToolContext, tmp_path: Path
) -> None:
    (tmp_path / "passwd").write_text("secret")
    result = await read(tool, ctx, "../etc/passwd")
    assert result.output == 'No skill named "passwd". Available skills: commit, deploy, review'
    result = await read(tool, ctx, "../../../../deploy")
    assert result.output == DEPLOY
    result = await read(tool, ctx, "/abs/review/")
    assert result.output.startswith("\n\n# Review")


async def test_a_trailing_md_is_forgiven(tool: ReadSkillTool, ctx: ToolContext) -> None:
    assert (await read(tool, ctx, "deploy.md")).output == DEPLOY


async def test_truncated_to_max_output(tool: ReadSkillTool, tmp_path: Path) -> None:
    ctx = ToolContext(cwd=tmp_path, settings=Settings(maxOutput=10))
    result = await read(tool, ctx, "deploy")
    assert (
        result.output
        == DEPLOY[:10] + f"\n[... output truncated: {len(DEPLOY) - 10} more characters ...]"
    )


async def test_skill_removed_after_start(
    tool: ReadSkillTool, ctx: ToolContext, skills_dir: Path
) -> None:
    (skills_dir / "commit.md").unlink()
    result = await read(tool, ctx, "commit")
    assert result.status == "error"
    assert result.output.startswith('skill "commit" cannot be read: ')


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("---\ndescription: From YAML\n---\nbody\n", "From YAML"),
        ("---\ndescription: >\n  folded\n  over lines\n---\n", "folded over lines"),
        ('---\ndescription: "quoted: yes"\n---\n', "quoted: yes"),
        ("---\nname: x\n---\n\n## First heading\n", "First heading"),
        ("---\ndescription: [unclosed\n---\nbody\n", "[unclosed"),
        ("---\r\ndescription: windows\r\n---\r\nbody\r\n", "windows"),
        ("plain first line\nsecond\n", "plain first line"),
        ("", "(no description)"),
        ("---\ndescription:\n---\n", "(no description)"),
        ("x" * 300, "x" * 199 + "…"),
    ],
)
def test_describe(text: str, expected: str) -> None:
    assert describe(text) == expected


FRONT_MATTERS = [
    "description: How code is written in this project\n",
    "name: x\ndescription: a b c  \n",
    "description:\n",
    "a_b-c: Hello world.\n\n# a comment\n",
    "description: ok\ndescription: later\n",
    "description: café — with [brackets], {braces}, *stars* & !bangs\n",
    "description: 'quoted'\n",
    "description: a # comment\n",
    "description: see http://x\n",
    # Left to PyYAML: what it reads otherwise than as the text, or cannot read flat
    "description: Yes\n",
    "description: null\n",
    "description: 3 cats\n",
    "description: see: x\n",
    "description: >\n  folded\n",
    "description: multi\n  line\n",
    "description: a\u00a0b\n",
    "Y: x\n",
]


@pytest.mark.parametrize("text", FRONT_MATTERS)
def test_a_flat_front_matter_reads_as_yaml_reads_it(text: str) -> None:
    """Front matters are read without PyYAML when they are flat `key: text` lines (the demo's
    playground's, most skills'): the same as PyYAML makes of them, or None (then PyYAML reads
    them)."""
    import yaml

    flat = read_flat_yaml(text)
    assert flat is None or flat == yaml.safe_load(text)
    assert (flat is not None) == (FRONT_MATTERS.index(text) < 9)


def test_the_playground_skill_is_described_without_pyyaml() -> None:
    import json
    import subprocess
    import sys

    code = (
        "import json, sys; from mm_tui.engine.playground import PLAYGROUND; "
        "from mm_tui.tools.read_skill import describe; "
        "print(json.dumps([describe(PLAYGROUND['.mm/skills/python-style.md']), "
        "'yaml' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == ["How code is written in this project", False]
