"""mm's settings: what they are, where they come from, and where a project's sessions go.

- `settings.py`: every key, its type, bounds and default (`Settings` and the classes of its
  nested mappings), and `ENV_NAMES`, the MM_* variable of each key.
- `validated_dataclass.py`: their base, dataclasses that pydantic validates only when there is
  something to validate (start-up without a config file never imports pydantic).
- `loading.py`: `load_settings`, the settings in force: defaults, then the person's
  `~/.config/mm/config.yaml`, the project's `.mm/config.yaml`, the file `--config` names, MM_*
  variables and flags, later ones winning; the one-line `ConfigError` that names the place
  that brought a bad key, with a "did you mean" for a misspelt one.
- `places.py`: each of those places read into layers, and their merge when no layer holds a
  mapping; `sources.py`: the merge of layers with nested mappings, by pydantic-settings.
- `files.py`: reading a config file's bytes and YAML.
- `project.py`: the keys a project's file gives only once the person trusted it, and why each.
- `folders.py`: the folders of a project's sessions.
"""

from mm_tui.config.fields import yaml_key
from mm_tui.config.files import HOME_CONFIG, PROJECT_CONFIG, ConfigError
from mm_tui.config.folders import (
    OLD_SESSIONS,
    known_sessions_folders,
    project_key,
    resolve_dir,
    sessions_folders,
)
from mm_tui.config.loading import load_settings
from mm_tui.config.project import (
    NEEDS_TRUST,
    TRUST_ANSWERS,
    ProjectConfig,
    answer_project,
    read_project,
    trust_project,
)
from mm_tui.config.settings import (
    ENV_NAMES,
    MCP_TYPES,
    AcpSettings,
    AgentRef,
    LspServer,
    LspSettings,
    McpServer,
    Settings,
)

__all__ = [
    "ENV_NAMES",
    "HOME_CONFIG",
    "MCP_TYPES",
    "NEEDS_TRUST",
    "OLD_SESSIONS",
    "PROJECT_CONFIG",
    "TRUST_ANSWERS",
    "AcpSettings",
    "AgentRef",
    "ConfigError",
    "LspServer",
    "LspSettings",
    "McpServer",
    "ProjectConfig",
    "Settings",
    "answer_project",
    "known_sessions_folders",
    "load_settings",
    "project_key",
    "read_project",
    "resolve_dir",
    "sessions_folders",
    "trust_project",
    "yaml_key",
]
