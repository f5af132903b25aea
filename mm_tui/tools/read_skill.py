"""The read_skill tool: hand the model one of the markdown skills of `skillsDir`.

A skill is `<skillsDir>/<name>.md` or `<skillsDir>/<name>/SKILL.md`; the flat file wins when both
exist. The catalogue (name and one-line description of each) goes into the tool's description, so
the model knows what exists without reading anything; the tool is declared only when there is at
least one skill, which is why discovery is a separate function the registry calls first.

A skill is read as read_file reads (`core/file_access.py`): unless the `sandbox` setting is off,
one that is (or leads to) a file the sandbox denies is refused, race-free, with the sandbox's
`[error: refused by mm's sandbox: …]`; a skills folder inside mm's configuration folder is
therefore refused too (keep skills elsewhere, the project's `.mm/skills` or `~/.local/share`).
"""

from __future__ import annotations

import asyncio
import errno
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mm_tui.config import Settings
from mm_tui.core.files import read_text, resolve_path
from mm_tui.core.flat_yaml import read_flat_yaml
from mm_tui.core.frozen import frozen
from mm_tui.core.paths import shown_path
from mm_tui.core.text import ellipsize
from mm_tui.tools import schemas
from mm_tui.tools.base import Tool, ToolContext, ToolResult, lazy_args, truncate
from mm_tui.tools.write_file import file_gate

if TYPE_CHECKING:
    from mm_tui.tools.args import ReadSkillArgs


DESCRIPTION_LIMIT = 200  # characters of a skill's description in the catalogue
NO_DESCRIPTION = "(no description)"
LINK_OUT = "is a symbolic link that leads out of the skills folder"
LINK_LOOP = "is a symbolic link loop"
INTRO = (
    "Read a skill: a markdown file of instructions for one kind of task. When a skill below "
    "fits the task, read it before starting. Available skills:"
)


@frozen
class Skill:
    name: str
    path: Path
    description: str


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
        meta: object = read_flat_yaml(match.group(1))
        if meta is None:
            import yaml  # here: only a front matter that is not flat needs PyYAML

            try:
                meta = yaml.safe_load(match.group(1))
            except yaml.YAMLError:  # a sloppy front matter still usually has a readable line
                line = _DESCRIPTION_LINE.search(match.group(1))
                description = line.group(1).strip().strip("\"'") if line else None
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
    return ellipsize(" ".join(text.split()), DESCRIPTION_LIMIT, strip=True)


def discover_skills(skills_dir: Path) -> dict[str, Skill]:
    """The skills of `skills_dir` by name, sorted; empty when the folder does not exist."""
    return find_skills(skills_dir)[0]


def find_skills(skills_dir: Path) -> tuple[dict[str, Skill], dict[str, str]]:
    """The skills of `skills_dir` by name, sorted, and the entries refused, by name, with the
    reason: a symbolic link that leads out of the folder or round in a loop."""
    found: dict[str, Path] = {}
    refused: dict[str, str] = {}
    try:
        entries = sorted(os.scandir(skills_dir), key=lambda e: e.name)
        root = os.path.realpath(skills_dir, strict=True)
    except OSError:
        return {}, {}
    for entry in entries:
        if entry.name.startswith("."):
            continue
        path = Path(entry.path)
        flat = entry.name.endswith(".md") and len(entry.name) > 3
        problem = _leaves(path, root)
        try:
            if problem == LINK_LOOP:
                if flat:
                    refused.setdefault(entry.name[:-3], f"{entry.name} {problem}")
            elif entry.is_dir():
                skill_file = path / "SKILL.md"
                inner = _leaves(skill_file, root) if problem is None else None
                if inner is not None:
                    refused.setdefault(entry.name, f"{entry.name}/SKILL.md {inner}")
                elif skill_file.is_file():
                    if problem is None:
                        found.setdefault(entry.name, skill_file)
                    else:
                        refused.setdefault(entry.name, f"{entry.name} {problem}")
            elif entry.is_file() and flat:
                if problem is None:
                    found[entry.name[:-3]] = path  # the flat file wins
                else:
                    refused[entry.name[:-3]] = f"{entry.name} {problem}"
        except OSError:
            continue
    skills: dict[str, Skill] = {}
    for name in sorted(found):
        refused.pop(name, None)
        try:
            description = describe(read_text(found[name]))
        except OSError:
            continue
        skills[name] = Skill(name, found[name], description)
    return skills, dict(sorted(refused.items()))


def _folder_of(skill: Skill) -> Path:
    """The skills folder a skill was found in: `<folder>/<name>.md` or `<folder>/<name>/SKILL.md`."""
    return skill.path.parent if skill.path.name == f"{skill.name}.md" else skill.path.parent.parent


def _leaves(path: Path, root: str) -> str | None:
    """Why `path` may not be read as a skill of the folder `root` (resolved), or None."""
    try:
        real = os.path.realpath(path, strict=True)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return LINK_LOOP
        return None  # missing: not a skill, nothing to refuse
    if os.path.commonpath([root, real]) != root:
        return LINK_OUT
    return None


class ReadSkillTool(Tool):
    name = "read_skill"
    kind = "read"
    counter = "skills"
    Args = lazy_args("ReadSkillArgs")
    parameters_schema = schemas.READ_SKILL

    def __init__(
        self, skills: Mapping[str, Skill], refused: Mapping[str, str] | None = None
    ) -> None:
        self.skills = dict(sorted(skills.items()))
        self.refused = dict(refused or {})  # name -> why it is not offered

    @classmethod
    def discover(cls, cwd: Path, settings: Settings) -> ReadSkillTool | None:
        """The tool for the skills of `settings.skills_dir`, or None when there is none to
        declare."""
        skills, refused = find_skills(resolve_path(settings.skills_dir, cwd))
        return cls(skills, refused) if skills else None

    def description(self) -> str:
        lines = [INTRO]
        lines += [f"  {skill.name} — {skill.description}" for skill in self.skills.values()]
        return "\n".join(lines)

    def short_description(self) -> str:
        return f"Read a skill: {', '.join(self.skills)}."

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
        # here: the sandbox loads at the first call, not at start-up
        from mm_tui.core.file_access import SandboxRefusal

        name = self._lookup_name(args.name)
        skill = self.skills.get(name)
        if skill is None and name in self.refused:
            return ToolResult(
                f'skill "{name}" cannot be read: {self.refused[name]}', status="error"
            )
        if skill is None:
            available = ", ".join(self.skills)
            return ToolResult(
                f'No skill named "{name}". Available skills: {available}', status="error"
            )
        try:
            # Looked at again: the file may have been swapped for a link since start-up.
            problem = _leaves(skill.path, os.path.realpath(_folder_of(skill)))
            if problem is not None:
                where = os.path.relpath(skill.path, _folder_of(skill))
                return ToolResult(
                    f'skill "{name}" cannot be read: {where} {problem}', status="error"
                )
            gate = file_gate(ctx)
            data = (await asyncio.to_thread(gate.read, shown_path(skill.path))).data
            text = data.decode("utf-8", errors="replace")
        except SandboxRefusal as exc:
            return ToolResult(exc.text, status="error")
        except OSError as exc:
            return ToolResult(
                f'skill "{name}" cannot be read: {exc.strerror or exc}', status="error"
            )
        return ToolResult(truncate(text, ctx.settings.max_output))
