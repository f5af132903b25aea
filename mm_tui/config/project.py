"""A project's own `./.mm/config.yaml` is not the person's: a command the model ran (mm runs them
without asking by default) may have written it. So the keys that change what runs, with what
confinement, or where data and the api key go (`NEEDS_TRUST`) are taken from it only once the
person trusted that file's exact bytes (`core/trust.py` keeps the answer); until then they are
left out, and the rest of the file applies. Which keys, and why each:

- `sandbox`, `sandboxNetwork`, `sandboxDeny`, `sandboxWrite`: the confinement of commands;
- `mcpServers`, `lsp`: programs mm starts, unconfined;
- `mmConfigs`: agents mm starts, each with its own config file and `yolo`;
- `baseUrl`, `apiKey`: where the conversation and the key go (a project's key would also hide
  which server is asked);
- `yolo`, `mode`, `permissions`: whether anything is asked before it runs;
- `bashTool`, `editTools`, `fetchContentTool`: which powers the model gets (a person who turned
  bash off at home is not overruled by a file in the folder);
- `commandEnvExclude`: which of the person's variables commands see;
- `skillsDir`: a folder mm reads and hands to the model (one outside the project reads the
  person's files); `sessionsDir`: where mm, unconfined, writes the conversation.

Not a power over the machine, so applied as before: `model`, `provider`, `systemPrompt`,
`temperature`, `maxOutput`, `previewLines`, `maxTurns`, `watchdogTimeout`, `contextWindow`,
`acp`, `theme`. The person's `~/.config/mm/config.yaml`, the file `--config` names, MM_*
variables and flags are the person's own and always apply.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mm_tui.config.files import PROJECT_CONFIG, parse_yaml, read_bytes
from mm_tui.core.frozen import mutable

NEEDS_TRUST: tuple[str, ...] = (
    "sandbox",
    "sandboxNetwork",
    "sandboxDeny",
    "sandboxWrite",
    "mcpServers",
    "lsp",
    "mmConfigs",
    "baseUrl",
    "apiKey",
    "yolo",
    "mode",
    "permissions",
    "bashTool",
    "editTools",
    "fetchContentTool",
    "commandEnvExclude",
    "skillsDir",
    "sessionsDir",
)
"""The keys a project's `.mm/config.yaml` gives only once the person trusted it (see the
module's docstring for why each)."""

TRUST_ANSWERS = ("trust", "once", "ignore")
"""What the person may answer about an untrusted project config: trust it (remembered for these
bytes), apply it this time only, or start without its untrusted keys."""


@mutable
class ProjectConfig:
    """The project's `.mm/config.yaml` as read once: its keys, which of them need trust, and
    whether they apply. A front end that can ask the person reads it (`read_project`), asks
    when `needs_answer`, sets `apply_untrusted`, and hands it to `load_settings`, which uses
    these very bytes: what was shown is what applies."""

    path: Path  # as found: <cwd>/.mm/config.yaml
    real_path: str  # symbolic links resolved: the record's name for it
    sha256: str
    label: str  # in error messages
    data: dict[str, Any]
    untrusted: dict[str, Any]  # the keys of NEEDS_TRUST it gives, with their values
    trusted: bool  # the record names these bytes
    warning: str | None = None  # the record could not be read
    apply_untrusted: bool = False

    @property
    def needs_answer(self) -> bool:
        return bool(self.untrusted) and not self.trusted

    def shown(self) -> list[str]:
        """`key: value` of each untrusted key, safe for a terminal (an api key's value hidden:
        it is a secret whoever wrote it)."""
        from mm_tui.core.trust import visible

        lines = []
        for key, value in self.untrusted.items():
            text = "(hidden)" if key == "apiKey" and value else _shown_value(value)
            lines.append(f"{visible(key)}: {text}")
        return lines

    def left_out(self) -> str:
        """The one line that says the untrusted keys were left out."""
        from mm_tui.core.trust import visible

        keys = ", ".join(visible(key) for key in self.untrusted)
        return (
            f"mm: {visible(str(self.path))} is not trusted: left out {keys} (the rest of it "
            "applies); run mm or mm --line here to review and trust it"
        )


def _shown_value(value: Any) -> str:
    """A value of a config file as JSON would spell it, but with a string's control characters
    as `core/trust.visible` shows them (`\\x1b`), a backslash doubled so that none is mistaken
    for one."""
    import json

    from mm_tui.core.trust import visible

    if isinstance(value, str):
        return '"' + visible(value.replace("\\", "\\\\").replace('"', '\\"')) + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_shown_value(each) for each in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{_shown_value(str(k))}: {_shown_value(v)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    return visible(json.dumps(value, default=str))


def read_project(
    cwd: Path | None = None,
    *,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> ProjectConfig | None:
    """The project's config file, None when there is none. Raises ConfigError as
    `load_settings` does for a bad file."""
    cwd = Path.cwd() if cwd is None else cwd
    path = cwd / PROJECT_CONFIG
    raw = read_bytes(path, str(PROJECT_CONFIG), required=False)
    if raw is None:
        return None
    from mm_tui.core.trust import digest, read_record, record_path

    layer = parse_yaml(raw, str(PROJECT_CONFIG))
    untrusted = {key: layer.data[key] for key in NEEDS_TRUST if key in layer.data}
    real_path, sha = os.path.realpath(path), digest(raw)
    trusted, warning = False, None
    if untrusted:
        record = read_record(record_path(home, environ))
        trusted, warning = (real_path, sha) in record.entries, record.warning
    return ProjectConfig(
        path=path,
        real_path=real_path,
        sha256=sha,
        label=layer.label,
        data=layer.data,
        untrusted=untrusted,
        trusted=trusted,
        warning=warning,
        apply_untrusted=trusted,
    )


def trust_project(
    project: ProjectConfig, *, home: Path | None = None, environ: Mapping[str, str] | None = None
) -> str | None:
    """Remember that the person trusts these bytes of the project's file (the answer
    "trust"); returns None, or a one-line warning when it could not be remembered."""
    from mm_tui.core.trust import record_path, remember

    project.apply_untrusted = True
    return remember(record_path(home, environ), project.real_path, project.sha256)


def answer_project(
    project: ProjectConfig,
    answer: str,
    *,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> str | None:
    """Do what the person answered (one of TRUST_ANSWERS) about an untrusted project file;
    returns a one-line warning when a "trust" could not be remembered (it holds this time)."""
    if answer == "trust":
        return trust_project(project, home=home, environ=environ)
    project.apply_untrusted = answer == "once"
    return None
