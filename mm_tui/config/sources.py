"""Layers of settings with nested mappings, laid over each other by pydantic-settings.

mm reads each place itself (`places.py`: its files, the project's file as read once, the
MM_* variables and OpenAI's, the flags) into layers, which `places.overlay` lays over each
other when none holds a mapping. When one does (`lsp`, `acp`, `mmConfigs`, `mcpServers`), the
layers go to pydantic-settings, one init source each: `MergedSettings` lays them over each other
in mm's order, nested mappings key by key; `Settings` (a stand-in for a model, see
validated_dataclass.py) then validates the result once, so that a value a later place replaces
is never judged.

This module imports pydantic-settings, which takes 10 to 15 ms beyond pydantic and the
settings' TypeAdapter: `loading.py` imports it only for layers with nested mappings
(docs/performance.md).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from mm_tui.config.files import Layer

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


def merged(layers: list[Layer]) -> dict[str, Any]:
    """The keys of `layers` (lowest first) laid over each other by pydantic-settings: a later
    layer wins, a mapping over a mapping merges key by key, a list replaces."""
    sources = tuple(InitSettingsSource(MergedSettings, layer.data) for layer in reversed(layers))
    token = _SOURCES.set(sources)  # the library's order: the first wins
    try:
        made = MergedSettings()
    finally:
        _SOURCES.reset(token)
    return dict(made.model_extra or {})
