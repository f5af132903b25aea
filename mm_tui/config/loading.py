"""The settings in force: every place they come from, laid over each other in mm's order, and
validated once; a bad value is traced back to the place that brought it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mm_tui.config.fields import yaml_key
from mm_tui.config.files import HOME_CONFIG, ConfigError, Layer
from mm_tui.config.project import ProjectConfig, read_project
from mm_tui.config.settings import (
    ENV_NAMES,
    AcpSettings,
    AgentRef,
    LspServer,
    LspSettings,
    McpServer,
    Settings,
)
from mm_tui.core.paths import shown_path, user_config_dir

if TYPE_CHECKING:
    from pydantic import ValidationError


def load_settings(
    *,
    config_file: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    cwd: Path | None = None,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
    project: ProjectConfig | None | Literal["read"] = "read",
) -> Settings:
    """Merge defaults, ~/.config/mm (`core/paths.py`: $XDG_CONFIG_HOME/mm when set), ./.mm, the
    --config agent file, MM_* variables and flags.

    Later layers win and nested mappings (lsp, acp, mmConfigs) merge key by key, so a project file
    can change one agent of mmConfigs without repeating the others. Raises ConfigError.

    `project`: the project's file as `read_project` read it (and a front end answered); by
    default it is read here, and its keys of NEEDS_TRUST apply only when the record trusts it.
    """
    cwd = Path.cwd() if cwd is None else cwd
    home = Path.home() if home is None else home
    environ = os.environ if environ is None else environ
    if project == "read":
        project = read_project(cwd, home=home, environ=environ)
    personal = user_config_dir(home, environ) / HOME_CONFIG.name
    project_data = {} if project is None else project.data
    if project is not None and not project.apply_untrusted:
        project_data = {k: v for k, v in project_data.items() if k not in project.untrusted}
    flags = {key: value for key, value in (overrides or {}).items() if value is not None}
    # A key of an untrusted project file is left out, yet still a secret to keep out of view.
    left_out = () if project is None or project.apply_untrusted else (project.untrusted,)
    if not (
        project_data
        or flags
        or config_file is not None
        or any(environ.get(var) for var in (*ENV_NAMES, "OPENAI_API_KEY"))
        or os.path.lexists(personal)
    ):
        # the defaults: nothing to validate, and neither pydantic nor its settings is imported
        settings = Settings()
        read_keys = tuple(_secret_text(data["apiKey"]) for data in left_out if data.get("apiKey"))
        if read_keys:
            vars(settings)["_read_keys"] = read_keys
        return settings

    from mm_tui.config.places import environment_layers, file_layers, given_layers, overlay

    read = [
        # lowest: the key of OpenAI's own clients counts only where no other place gives one
        *environment_layers({"OPENAI_API_KEY": "apiKey"}, environ),
        *file_layers(personal, shown_path(personal, home), required=False),
    ]
    if project is not None:
        read += given_layers(project_data, project.label)
    if config_file is not None:
        path = cwd / Path(config_file).expanduser()
        read += file_layers(path, str(config_file), required=True)
    read += [
        *environment_layers(ENV_NAMES, environ),
        *given_layers(flags, "flag --{key}", one_key=True),
    ]
    settings_data = overlay(read)
    if settings_data is None:  # a nested mapping, merged key by key
        from mm_tui.config.sources import merged

        settings_data = merged(read)
    layers = [layer for layer in read if layer.data]
    read_keys = tuple(
        _secret_text(data["apiKey"])
        for data in [*(layer.data for layer in layers), *left_out]
        if data.get("apiKey") is not None
    )
    try:
        # YAML spelling only, at every level: accepting `max_output` too would let two spellings
        # of one key fight silently across layers.
        settings = Settings.model_validate(settings_data, by_alias=True, by_name=False)
    except Exception as exc:
        # pydantic's error, when pydantic was asked: plain values are checked without it
        from pydantic import ValidationError

        if not isinstance(exc, ValidationError):
            raise
        raise _explain(exc, layers) from None
    # From here on, no session file or tool output shows them.
    vars(settings)["_read_keys"] = read_keys
    return settings


def _secret_text(value: Any) -> str:
    """A key as a layer holds it: text, or a SecretStr (whose str() is the stars)."""
    from pydantic import SecretStr  # loaded: the layer made it

    return value.get_secret_value() if isinstance(value, SecretStr) else str(value)


def _explain(exc: ValidationError, layers: list[Layer]) -> ConfigError:
    """Turn pydantic's report into one line about the layer that brought the bad key."""
    errors = exc.errors()
    # A misspelt key also makes its correct spelling "missing": name the misspelling.
    error = next((e for e in errors if e["type"] in UNKNOWN_KEY), errors[0])
    loc = tuple(error["loc"])
    layer = _blame(layers, loc)
    dotted = ".".join(str(part) for part in loc)
    if error["type"] in UNKNOWN_KEY:
        hint = _did_you_mean(str(loc[-1]))
        return ConfigError(layer.label, f'unknown key "{dotted}"{hint}')
    key = None if layer.one_key and len(loc) == 1 else dotted
    return ConfigError(layer.label, error["msg"], key)


def _blame(layers: list[Layer], loc: tuple[Any, ...]) -> Layer:
    """The last layer that holds loc, or its nearest parent (a missing key has no value)."""
    for depth in range(len(loc), 0, -1):
        for layer in reversed(layers):
            if _holds(layer.data, loc[:depth]):
                return layer
    return Layer("settings", {})


def _holds(data: Any, path: tuple[Any, ...]) -> bool:
    for part in path:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return False
    return True


UNKNOWN_KEY = ("unexpected_keyword_argument", "extra_forbidden")
"""pydantic's error for an unknown key: a dataclass's, and a model's."""


def _did_you_mean(key: str) -> str:
    import difflib

    known: dict[str, str] = {}
    for model in (Settings, LspSettings, LspServer, AcpSettings, AgentRef, McpServer):
        for name in model.model_fields:
            known[_loose(yaml_key(name))] = yaml_key(name)
    close = difflib.get_close_matches(_loose(key), known, n=1, cutoff=0.8)
    return f' (did you mean "{known[close[0]]}"?)' if close else ""


def _loose(key: str) -> str:
    return key.replace("_", "").replace("-", "").lower()
