"""A project's `.mm/config.yaml` trusted as the person's answer "trust" records it (with mm's own
function), for the tests whose project file sets keys that need trust (mcpServers, mmConfigs,
lsp...) and that test something else."""

from __future__ import annotations

from pathlib import Path

from mm_tui.config import read_project, trust_project
from support.env import home_variables


def trust_project_file(cwd: Path, home: Path) -> None:
    """Trust `cwd`/.mm/config.yaml, as it is now, for an mm whose home is `home`."""
    environ = home_variables(home)
    project = read_project(cwd, home=home, environ=environ)
    assert project is not None, f"no {cwd}/.mm/config.yaml"
    assert trust_project(project, home=home, environ=environ) is None
