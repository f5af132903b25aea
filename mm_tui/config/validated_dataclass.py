"""The base of the settings classes: plain dataclasses that pydantic validates, through a
`TypeAdapter` reading their annotations (which name the bounds and checks), only when there is
something to validate: a config file, an MM_* variable, a flag, or settings made in code with
values. Without any, mm starts on the defaults without importing pydantic. The classes keep the
pydantic model methods mm and its tests use (`model_validate`, `model_dump`, `model_dump_json`,
`model_copy`, `model_fields_set`): a stand-in for pydantic's models, for start-up's sake (see
docs/performance.md).
"""

from __future__ import annotations

import copy
import dataclasses
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

from mm_tui.config.fields import settings_fields, yaml_key

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler, TypeAdapter
    from pydantic_core import CoreSchema


# What the annotations name for pydantic, made when it first reads them (at the first
# validation), so that nothing here imports pydantic before that.


def bound(**bounds: float) -> Any:
    """A number's bounds (`ge=1`, `gt=0`)."""
    from pydantic import Field

    return Field(**bounds)  # pyright: ignore[reportCallIssue, reportArgumentType]


def before(check: Callable[[Any], Any]) -> Any:
    from pydantic import BeforeValidator

    return BeforeValidator(check)


def after(check: Callable[[Any], Any]) -> Any:
    from pydantic import AfterValidator

    return AfterValidator(check)


class _Fields:
    """`Settings.model_fields`: the fields by name, as pydantic models list them."""

    def __get__(self, obj: object, owner: type) -> dict[str, dataclasses.Field[Any]]:
        return {each.name: each for each in settings_fields(owner)}


_C = TypeVar("_C", bound="SettingsBase")


class SettingsBase:
    """What the settings classes share. Unknown keys are an error: a misspelt key silently
    ignored is worse than a clear stop. A key goes by its YAML spelling or by its attribute's
    name (`load_settings` allows only the YAML one).

    Made with values, a class validates them, as a pydantic model does; made without, it takes
    its defaults, which are valid, without pydantic. Mutable defaults are factories that are
    lambdas: pydantic reads a factory's signature, and a builtin's (`list`) is slow to read the
    first time (inspect parses its text signature): see docs/performance.md."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {
        "extra": "forbid",
        "populate_by_name": True,
        "alias_generator": yaml_key,
    }
    model_fields: ClassVar[_Fields] = _Fields()
    _fields_set: frozenset[str] = frozenset()  # the keys given, as pydantic's fields_set

    def __init__(self, **data: Any) -> None:
        fields = settings_fields(type(self))
        if data or type(self)._checked is not SettingsBase._checked or any(map(_required, fields)):
            self.__dict__.update(type(self).model_validate(data).__dict__)
            return
        for each in fields:
            if each.default_factory is not dataclasses.MISSING:
                setattr(self, each.name, each.default_factory())
            else:
                setattr(self, each.name, each.default)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(
            getattr(self, each.name) == getattr(other, each.name)
            for each in settings_fields(type(self))
        ) and getattr(self, "_read_keys", ()) == getattr(other, "_read_keys", ())

    __hash__ = None  # pyright: ignore[reportAssignmentType] - mutable, as a pydantic model

    @classmethod
    def model_validate(
        cls, obj: Any, *, by_alias: bool | None = None, by_name: bool | None = None
    ) -> Self:
        """Validated `obj` (a mapping of keys), or pydantic's `ValidationError`. Plain values
        are checked without pydantic (config/plain_values.py)."""
        from mm_tui.config.plain_values import plain_instance

        made = plain_instance(cls, obj, by_alias=by_alias, by_name=by_name)
        if made is not None:
            return made
        return _adapter(cls).validate_python(obj, by_alias=by_alias, by_name=by_name)

    def model_dump(self, **options: Any) -> dict[str, Any]:
        return _adapter(type(self)).dump_python(self, **options)

    def model_dump_json(self, **options: Any) -> str:
        return _adapter(type(self)).dump_json(self, **options).decode()

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy, with `update`'s values (by attribute name, not validated)."""
        made = copy.deepcopy(self) if deep else copy.copy(self)
        if update:
            made.__dict__.update(update)
            made._fields_set = self._fields_set | set(update)
        return made

    @property
    def model_fields_set(self) -> set[str]:
        """The attributes given a value rather than left to their defaults."""
        return set(self._fields_set)

    def _checked(self) -> None:
        """What the fields, each valid, must satisfy together: raises PydanticCustomError."""

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[Any], handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        """The dataclass as pydantic validates it, its fields' validation wrapped: the error a
        model gives for a value of the wrong kind (a dataclass's words differ), `_checked`, and
        the keys given noted (pydantic makes the instance's `__dict__` of what this returns)."""
        from pydantic_core import PydanticCustomError, core_schema

        schema: Any = handler(source)  # a dataclass's: {"type": "dataclass", "schema": ...}
        aliases = {each.name: yaml_key(each.name) for each in settings_fields(cls)}

        def validate(value: Any, inner: Callable[[Any], Any]) -> Any:
            if not isinstance(value, Mapping):
                raise PydanticCustomError(
                    "model_type",
                    "Input should be a valid dictionary or instance of {class_name}",
                    {"class_name": cls.__name__},
                )
            fields, rest = inner(value)
            probe = object.__new__(cls)
            probe.__dict__.update(fields)
            probe._checked()
            fields["_fields_set"] = frozenset(
                name for name, alias in aliases.items() if alias in value or name in value
            )
            return fields, rest

        schema["schema"] = core_schema.no_info_wrap_validator_function(validate, schema["schema"])
        return schema


def _required(each: dataclasses.Field[Any]) -> bool:
    return each.default is dataclasses.MISSING and each.default_factory is dataclasses.MISSING


_adapters: dict[type, Any] = {}


def _adapter(cls: type[_C]) -> TypeAdapter[_C]:
    """pydantic's validator of `cls`, made (and pydantic imported) at the first use."""
    adapter = _adapters.get(cls)
    if adapter is None:
        from pydantic import SecretStr, TypeAdapter

        # named by an annotation of the settings, which pydantic reads now
        vars(sys.modules[cls.__module__]).setdefault("SecretStr", SecretStr)
        adapter = _adapters[cls] = TypeAdapter(cls)
    return adapter
