"""The read_skill tool: hand the model one of the markdown skills of `skillsDir`.

A skill is `<skillsDir>/<name>.md` or `<skillsDir>/<name>/SKILL.md`; the flat file wins when both
exist. The catalogue (name and one-line description of each) goes into the tool's description, so
the model knows what exists without reading anything; the tool is declared only when there is at
least one skill, which is why discovery is a separate function the registry calls first.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import Field

from mm_tui.config import Settings
from mm_tui.tools.base import Tool, ToolArgs, ToolContext, ToolResult, truncate

DESCRIPTION_LIMIT = 200  # characters of a skill's description in the catalogue
NO_DESCRIPTION = "(no description)"
INTRO = (
    "Read a skill: a markdown file of instructions for one kind of task. When a skill below "
    "fits the task, read it before starting. Available skills:"
)


@dataclass(frozen=True)
class Skill:
    name: str
    path: Path
    description: str


class ReadSkillArgs(ToolArgs):
    name: str = Field(description="Skill name, exactly as listed in the tool description.")


_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^(?:---|\.\.\.)[ \t]*\r?$\n?", re.S | re.M)
_DESCRIPTION_LINE = re.compile(r"^description:[ \t]*(.+)$", re.M)


def describe(text: str) -> str:
    """One line for the catalogue: the front matter's `description:`, else the first line of
    text (a heading's `#` taken off)."""
    body = text
    match = _FRONT_MATTER.match(text)
    if match:
        body = text[match.end() :]
        description = None
        try:
            meta = yaml.safe_load(match.group(1))
        except yaml.YAMLError:  # a sloppy front matter still usually has a readable line
            line = _DESCRIPTION_LINE.search(match.group(1))
            description = line.group(1).strip().strip("\"'") if line else None
        else:
            if isinstance(meta, dict) and meta.get("description") is not None:
                description = str(meta["description"])
        if description and description.strip():
            return _one_line(description)
    for line in body.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return _one_line(line)
    return NO_DESCRIPTION


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > DESCRIPTION_LIMIT:
        text = text[: DESCRIPTION_LIMIT - 1].rstrip() + "…"
    return text


def _read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def discover_skills(skills_dir: Path) -> dict[str, Skill]:
    """The skills of `skills_dir` by name, sorted; empty when the folder does not exist."""
    found: dict[str, Path] = {}
    try:
        entries = sorted(os.scandir(skills_dir), key=lambda e: e.name)
    except OSError:
        return {}
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            if entry.is_dir():
                skill_file = Path(entry.path) / "SKILL.md"
                if skill_file.is_file():
                    found.setdefault(entry.name, skill_file)
            elif entry.is_file() and entry.name.endswith(".md") and len(entry.name) > 3:
                found[entry.name[:-3]] = Path(entry.path)  # the flat file wins
        except OSError:
            continue
    skills: dict[str, Skill] = {}
    for name in sorted(found):
        try:
            description = describe(_read_text(found[name]))
        except OSError:
            continue
        skills[name] = Skill(name, found[name], description)
    return skills


class ReadSkillTool(Tool):
    name = "read_skill"
    kind = "read"
    counter = "skills"
    Args = ReadSkillArgs

    def __init__(self, skills: Mapping[str, Skill]) -> None:
        self.skills = dict(sorted(skills.items()))

    @classmethod
    def discover(cls, cwd: Path, settings: Settings) -> ReadSkillTool | None:
        """The tool for the skills of `settings.skills_dir`, or None when there is none to
        declare."""
        skills = discover_skills(cwd / Path(settings.skills_dir).expanduser())
        return cls(skills) if skills else None

    def description(self) -> str:
        lines = [INTRO]
        lines += [f"  {skill.name} — {skill.description}" for skill in self.skills.values()]
        return "\n".join(lines)

    def title(self, args: ReadSkillArgs) -> str:
        return args.name

    def display(self, args: ReadSkillArgs) -> str:
        return f"📖 read_skill: {args.name}"

    def locations(self, args: ReadSkillArgs, ctx: ToolContext) -> tuple[str, ...]:
        skill = self.skills.get(self._lookup_name(args.name))
        return (os.path.abspath(skill.path),) if skill else ()

    def _lookup_name(self, name: str) -> str:
        """Only the base name counts: `../../etc/passwd` can never leave skillsDir. A `.md` the
        model added is forgiven."""
        base = os.path.basename(name.strip().replace("\\", "/").rstrip("/"))
        if base not in self.skills and base.endswith(".md") and base[:-3] in self.skills:
            base = base[:-3]
        return base

    async def run(self, args: ReadSkillArgs, ctx: ToolContext) -> ToolResult:
        name = self._lookup_name(args.name)
        skill = self.skills.get(name)
        if skill is None:
            available = ", ".join(self.skills)
            return ToolResult(
                f'No skill named "{name}". Available skills: {available}', status="error"
            )
        try:
            text = await asyncio.to_thread(_read_text, skill.path)
        except OSError as exc:
            return ToolResult(
                f'skill "{name}" cannot be read: {exc.strerror or exc}', status="error"
            )
        return ToolResult(truncate(text, ctx.settings.max_output))
