"""The places settings come from, as pydantic-settings sources, and their merge.

pydantic-settings reads and merges them: a YAML source for the person's file and the one
`--config` names, an environment source for the MM_* variables (and OPENAI_API_KEY), init
sources for the project's file (its bytes were read once, by `project.read_project`, so that
what the person was shown is what applies) and the flags. `MergedSettings` lays them over each
other in mm's order, nested mappings key by key; `Settings` (a stand-in for a model, see
validated_dataclass.py) then validates the result once, so that a value a later place replaces
is never judged.

What mm adds to the library's sources: each keeps a label for the messages (`~/.config/mm/
config.yaml`, `environment MM_MODEL`, `flag --theme`: `layers()`), so that an error names the
place that brought the bad key; the YAML is read as `files.parse_yaml` reads it (a key given
twice refused, UTF-8 checked, the top level a mapping, the error's line and column); the
environment is the mapping `load_settings` was given, not only `os.environ` (the environment
source's `_load_env_vars` is where the library's own dotenv source reads its file); and an api
key is hidden (a SecretStr) from the moment it is read.

This module imports pydantic-settings, which takes about 10 ms beyond pydantic on a machine
where window mode has loaded asyncio already: `loading.py` imports it only when there is a
place to read (docs/performance.md).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from pydantic import SecretStr, create_model
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)
from pydantic_settings.sources.utils import parse_env_vars

from mm_tui.config.files import Layer, parse_yaml, read_bytes

_SOURCES: ContextVar[tuple[PydanticBaseSettingsSource, ...]] = ContextVar("mm_settings_sources")


class MergedSettings(BaseSettings):
    """Only merges: every key of every source is kept as it is (`model_extra`), for `Settings`
    to validate. Its sources are the ones `merged` was given (through the library's hook,
    `settings_customise_sources`), in place of the library's defaults."""

    model_config = SettingsConfigDict(extra="allow")

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], *defaults: PydanticBaseSettingsSource, **named: Any
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return _SOURCES.get()


def _hidden(data: Mapping[str, Any]) -> dict[str, Any]:
    """`data`, its api key a SecretStr: whatever shows a source's data shows stars."""
    key = data.get("apiKey")
    return {**data, "apiKey": SecretStr(key)} if isinstance(key, str) else dict(data)


class YamlFile(YamlConfigSettingsSource):
    """A configuration file, read as mm reads one (`files.parse_yaml`). A missing file gives
    nothing, or ConfigError `no such file` when it is `required` (the file `--config` names); a
    folder or an unreadable file is a ConfigError too, never passed over."""

    def __init__(self, path: Path, label: str, *, required: bool) -> None:
        self.label, self.required = label, required
        super().__init__(MergedSettings, yaml_file=path)

    def _read_files(self, files: Any, deep_merge: bool = False) -> dict[str, Any]:
        return self._read_file(Path(files))

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        raw = read_bytes(Path(file_path), self.label, required=self.required)
        return {} if raw is None else _hidden(parse_yaml(raw, self.label).data)

    def layers(self) -> list[Layer]:
        return [Layer(self.label, self.init_kwargs)]


class Given(InitSettingsSource):
    """Keys given whole: the project's file as read once (one label), or the flags (`one_key`:
    a label for each, `flag --max-output`)."""

    def __init__(self, data: Mapping[str, Any], label: str, *, one_key: bool = False) -> None:
        self.label, self.one_key = label, one_key
        super().__init__(MergedSettings, _hidden(data))

    def layers(self) -> list[Layer]:
        if not self.one_key:
            return [Layer(self.label, self.init_kwargs)]
        return [
            Layer(self.label.format(key=_kebab(key)), {key: value}, one_key=True)
            for key, value in self.init_kwargs.items()
        ]


@functools.cache
def _variables(names: tuple[str, ...]) -> type[BaseSettings]:
    """A settings class with a field for each variable, as the environment source reads its
    fields: by their exact names (case-sensitive, no prefix)."""
    fields: Any = {name: (Any, None) for name in names}
    return create_model("Variables", __base__=BaseSettings, **fields)


class Environment(EnvSettingsSource):
    """Variables of `environ`, each under the YAML key `names` gives it (`MM_MAX_OUTPUT`:
    `maxOutput`). A variable set empty counts as unset, as shells make that easy to write."""

    def __init__(self, names: Mapping[str, str], environ: Mapping[str, str]) -> None:
        self.names, self.environ = dict(names), environ
        self.found: dict[str, Any] = {}
        super().__init__(_variables(tuple(names)), case_sensitive=True, env_ignore_empty=True)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(self.environ, True, True, None)

    def __call__(self) -> dict[str, Any]:
        read = super().__call__()
        self.found = {
            var: _hidden({self.names[var]: read[var]}) for var in self.names if var in read
        }
        return {key: value for data in self.found.values() for key, value in data.items()}

    def layers(self) -> list[Layer]:
        """A layer for each variable the merge read (`merged` calls the source first)."""
        return [Layer(f"environment {var}", data, one_key=True) for var, data in self.found.items()]


Source = YamlFile | Given | Environment


def merged(sources: list[Source]) -> dict[str, Any]:
    """The keys of `sources` (lowest first) laid over each other by pydantic-settings: a later
    source wins, a mapping over a mapping merges key by key, a list replaces."""
    token = _SOURCES.set(tuple(reversed(sources)))  # the library's order: the first wins
    try:
        made = MergedSettings()
    finally:
        _SOURCES.reset(token)
    return dict(made.model_extra or {})


def _kebab(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", key).lower()
