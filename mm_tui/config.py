"""Settings: every configuration key of the design, spelled as the original program spelled it,
as the reference (docs/tools.md) does too: `bashTool`, `maxOutput`.

Keys keep that camelCase in YAML files (`baseUrl`, `maxOutput`); in Python they are
snake_case attributes (`settings.base_url`, `settings.max_output`).

The settings are plain dataclasses, and pydantic validates them (a `TypeAdapter` reading the
annotations below, which name the bounds and checks) only when there is something to validate:
a config file, an MM_* variable, a flag, or settings made in code with values. Without any, mm
starts on the defaults without importing pydantic. The classes keep the pydantic model methods
mm and its tests use (`model_validate`, `model_dump`, `model_dump_json`, `model_copy`,
`model_fields_set`): a stand-in for pydantic's models, for start-up's sake (see
docs/performance.md).

A project's own `./.mm/config.yaml` is not the person's: a command the model ran (mm runs them
without asking by default) may have written it. So the keys that change what runs, with what
confinement, or where data and the api key go (`NEEDS_TRUST`) are taken from it only once the
person trusted that file's exact bytes (`core/trust.py` keeps the answer); until then they are
left out, and the rest of the file applies. Which keys, and why each:

- `sandbox`, `sandboxNetwork`, `sandboxDeny`, `sandboxWrite`: the confinement of commands;
- `mcpServers`, `lsp`: programs mm starts, unconfined;
- `mmConfigs`: agents mm starts, each with its own config file and `yolo`;
- `baseUrl`, `apiKey`: where the conversation and the key go (a project's key would also hide
  which server is asked);
- `yolo`: whether anything is asked before it runs;
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

import copy
import dataclasses
import os
import re
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self, TypeVar

from mm_tui.core.command_env import DEFAULT_EXCLUDE
from mm_tui.core.files import resolve_path
from mm_tui.core.paths import is_playground, shown_path, user_config_dir, user_state_dir

if TYPE_CHECKING:
    import yaml
    from pydantic import GetCoreSchemaHandler, SecretStr, TypeAdapter, ValidationError
    from pydantic_core import CoreSchema

    from mm_tui.core.sandbox import SandboxConfig


def _alias(name: str) -> str:
    """A key's YAML spelling: its attribute's name in camelCase (`max_output`: `maxOutput`)."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


# What the annotations name for pydantic, made when it first reads them (at the first
# validation), so that nothing here imports pydantic before that.


def _bound(**bounds: float) -> Any:
    """A number's bounds (`ge=1`, `gt=0`)."""
    from pydantic import Field

    return Field(**bounds)  # pyright: ignore[reportCallIssue, reportArgumentType]


def _before(check: Callable[[Any], Any]) -> Any:
    from pydantic import BeforeValidator

    return BeforeValidator(check)


def _after(check: Callable[[Any], Any]) -> Any:
    from pydantic import AfterValidator

    return AfterValidator(check)


class _Fields:
    """`Settings.model_fields`: the fields by name, as pydantic models list them."""

    def __get__(self, obj: object, owner: type) -> dict[str, dataclasses.Field[Any]]:
        return {each.name: each for each in _fields(owner)}


_known: dict[type, tuple[dataclasses.Field[Any], ...]] = {}


def _fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    """The fields of a settings class (`__dataclass_fields__` also holds its ClassVars)."""
    found = _known.get(cls)
    if found is None:
        found = _known[cls] = dataclasses.fields(cls)
    return found


_C = TypeVar("_C", bound="_Config")


class _Config:
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
        "alias_generator": _alias,
    }
    model_fields: ClassVar[_Fields] = _Fields()
    _fields_set: frozenset[str] = frozenset()  # the keys given, as pydantic's fields_set

    def __init__(self, **data: Any) -> None:
        fields = _fields(type(self))
        if data or type(self)._checked is not _Config._checked or any(map(_required, fields)):
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
            getattr(self, each.name) == getattr(other, each.name) for each in _fields(type(self))
        ) and getattr(self, "_read_keys", ()) == getattr(other, "_read_keys", ())

    __hash__ = None  # pyright: ignore[reportAssignmentType] - mutable, as a pydantic model

    @classmethod
    def model_validate(
        cls, obj: Any, *, by_alias: bool | None = None, by_name: bool | None = None
    ) -> Self:
        """Validated `obj` (a mapping of keys), or pydantic's `ValidationError`."""
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
        aliases = {each.name: _alias(each.name) for each in _fields(cls)}

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

        globals()["SecretStr"] = SecretStr  # named by an annotation, which pydantic reads now
        adapter = _adapters[cls] = TypeAdapter(cls)
    return adapter


@dataclass(init=False, eq=False)
class LspServer(_Config):
    name: str
    command: str
    args: list[str] = field(default_factory=lambda: [])
    extensions: list[str] = field(default_factory=lambda: [])


@dataclass(init=False, eq=False)
class LspSettings(_Config):
    servers: list[LspServer] = field(default_factory=lambda: [])


@dataclass(init=False, eq=False)
class AcpSettings(_Config):
    title: str = "mm"


@dataclass(init=False, eq=False)
class McpServer(_Config):
    """An entry of mcpServers, in the shape every MCP client uses: `command` (with `args`, `env`
    and `cwd`) starts a server on stdio; `url` (with `headers`) reaches one over streamable
    HTTP. `type` may say which (`stdio`, `http`); `startupTimeout` bounds its start (the
    handshake and the list of its tools), `timeout` each call, in seconds."""

    type: str | None = None
    command: str | None = None
    args: list[str] = field(default_factory=lambda: [])
    env: dict[str, str] = field(default_factory=lambda: {})
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=lambda: {})
    # 10 s: `mm -p` and an ACP prompt wait for every server to start or fail before their one
    # request, so a server that never answers holds them that long (a server on npx that must
    # download itself first may need a higher one)
    startup_timeout: Annotated[float, _bound(gt=0)] = 10
    timeout: Annotated[float, _bound(gt=0)] = 60

    def _checked(self) -> None:
        """One transport, given consistently."""
        from pydantic_core import PydanticCustomError

        kind = (self.type or "").lower().replace("_", "-")
        if kind and kind not in MCP_TYPES:
            raise PydanticCustomError(
                "mcp_type",
                "type {type} is not one mm speaks: stdio (with command) or http (with url)",
                {"type": self.type},
            )
        if self.command and self.url:
            raise PydanticCustomError("mcp_both", "give command or url, not both")
        if not (self.command or self.url):
            raise PydanticCustomError(
                "mcp_none", "give command (a server on stdio) or url (one over streamable HTTP)"
            )
        if kind and MCP_TYPES[kind] != self.transport:
            needs = "command" if MCP_TYPES[kind] == "stdio" else "url"
            raise PydanticCustomError(
                "mcp_type", "type {type} needs {needs}", {"type": self.type, "needs": needs}
            )
        if self.url and not self.url.startswith(("http://", "https://")):
            raise PydanticCustomError(
                "mcp_url", "url must start with http:// or https://, not {url}", {"url": self.url}
            )

    @property
    def transport(self) -> str:
        """`stdio` or `http`."""
        return "stdio" if self.command else "http"

    def expanded(self, environ: Mapping[str, str]) -> tuple[McpServer, list[str]]:
        """This entry with `${VAR}` and `${VAR:-default}` in `command`, `args`, `env`, `url`
        and `headers` replaced from `environ`, as other MCP clients do (a token is kept out of
        the file so); and the variables it names that are not set (they become empty)."""
        unset: list[str] = []

        def text(value: str) -> str:
            def one(match: re.Match[str]) -> str:
                name, default = match.group(1), match.group(2)
                value = environ.get(name, "")
                if default is not None:  # `:-`: unset or empty, as a shell reads it
                    return value or default
                if name not in environ and name not in unset:
                    unset.append(name)
                return value

            return MCP_VARIABLE.sub(one, value)

        made = self.model_copy(
            update={
                "command": text(self.command) if self.command is not None else None,
                "args": [text(arg) for arg in self.args],
                "env": {key: text(value) for key, value in self.env.items()},
                "url": text(self.url) if self.url is not None else None,
                "headers": {key: text(value) for key, value in self.headers.items()},
            }
        )
        return made, unset


MCP_TYPES = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamablehttp": "http",
}
"""The values of an mcpServers entry's `type` that mm accepts (lower case, `_` read as `-`);
SSE, the transport the protocol replaced, is not among them."""

MCP_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
"""`${VAR}` or `${VAR:-default}` in an mcpServers entry (see `McpServer.expanded`)."""

MCP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
"""A server's name: the first part of its tools' names (`files__read`), which a model's tool
name must allow."""


@dataclass(init=False, eq=False)
class AgentRef(_Config):
    """An entry of mmConfigs: an agent that ask_agent and /ask can hand work to."""

    config: str
    description: str | None = None
    yolo: bool | None = None


def _mcp_names(value: dict[str, McpServer]) -> dict[str, McpServer]:
    from pydantic_core import PydanticCustomError

    for name in value:
        if not MCP_NAME.fullmatch(name):
            raise PydanticCustomError(
                "mcp_name",
                'server name "{name}" may hold only letters, digits, - and _ (its tools '
                "are named <server>__<tool>)",
                {"name": name},
            )
    return value


def _patterns_of_a_text(value: Any) -> Any:
    """One text (MM_COMMAND_ENV_EXCLUDE, MM_SANDBOX_DENY, or a YAML string) holds
    comma-separated patterns or paths."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def _sandbox_mode(value: Any) -> Any:
    """YAML 1.1 reads an unquoted `sandbox: off` (or `no`) as false, and `on` as true: what a
    person means by them, not a type error that stops mm from starting."""
    if value is False:
        return "off"
    if value is True:
        return "auto"
    return value


@dataclass(init=False, eq=False)
class Settings(_Config):
    base_url: str | None = None
    model: str | None = None
    provider: str | None = None
    api_key: SecretStr | None = None
    system_prompt: str | None = None
    temperature: float | None = None
    yolo: bool = True
    bash_tool: bool = True
    # Variables kept from the commands the model runs (bash, language servers): case-insensitive
    # globs (core/command_env.py). mm's own key variables are kept from them whatever this says.
    command_env_exclude: Annotated[list[str], _before(_patterns_of_a_text)] = field(
        default_factory=lambda: list(DEFAULT_EXCLUDE)
    )
    # The sandbox of the commands the model runs, bash and language servers (core/sandbox.py):
    # auto confines them where Landlock works, strict refuses to run them where it does not.
    sandbox: Annotated[Literal["auto", "off", "strict"], _before(_sandbox_mode)] = "auto"
    sandbox_network: bool = True
    sandbox_deny: Annotated[list[str], _before(_patterns_of_a_text)] = field(
        default_factory=lambda: []
    )  # beyond ~/.ssh...
    sandbox_write: Annotated[list[str], _before(_patterns_of_a_text)] = field(
        default_factory=lambda: []
    )  # more folders
    edit_tools: bool = True
    fetch_content_tool: bool = False
    skills_dir: str = ".mm/skills"
    lsp: LspSettings = field(default_factory=lambda: LspSettings())
    mm_configs: dict[str, AgentRef] = field(default_factory=lambda: {})
    mcp_servers: Annotated[dict[str, McpServer], _after(_mcp_names)] = field(
        default_factory=lambda: {}
    )
    max_output: Annotated[int, _bound(ge=1)] = 30000
    preview_lines: Annotated[int, _bound(ge=0)] = 5
    max_turns: Annotated[int, _bound(ge=1)] = 50
    watchdog_timeout: Annotated[float, _bound(gt=0)] = 120
    # The model's context in tokens, when the server does not say it (or says it wrong): it
    # overrides what mm reads from the server at start-up.
    context_window: Annotated[int | None, _bound(ge=512)] = None
    acp: AcpSettings = field(default_factory=lambda: AcpSettings())
    theme: str = "mm-dark"
    # None: mm's state folder, one folder a project (`sessions_folders`); never the project.
    sessions_dir: str | None = None
    # Every api key the layers gave, even those a later layer overrode: each is still a secret
    # (`cat` shows the file that holds it), kept out of what mm shows and writes.
    _read_keys: ClassVar[tuple[str, ...]] = ()

    def secret_values(self) -> tuple[str, ...]:
        """The api keys these settings know, for a `Redactor`: the one in force, every one the
        configuration read, and what the base URL carries (`https://user:KEY@host`,
        `?api_key=KEY`: core/redact.py's `url_secrets`)."""
        from mm_tui.core.redact import url_secrets

        key = self.api_key.get_secret_value() if self.api_key is not None else None
        keys = (*self._read_keys, key) if key else self._read_keys
        return (*keys, *url_secrets(self.base_url)) if self.base_url else keys

    def sandbox_config(self) -> SandboxConfig:
        """What core/sandbox.py needs of these settings."""
        from mm_tui.core.sandbox import SandboxConfig

        return SandboxConfig(
            mode=self.sandbox,
            network=self.sandbox_network,
            deny=tuple(self.sandbox_deny),
            write=tuple(self.sandbox_write),
        )


# --- Loading ------------------------------------------------------------------------------------
#
# Each place a setting can come from is a layer: a label for error messages and the raw keys it
# gives, spelt as in YAML. The layers are merged (nested mappings key by key, later layers
# winning) and the result is validated once, so a value that a later layer replaces is never
# judged; when the result is invalid, the error is traced back to the last layer that holds the
# offending key.

ENV_NAMES: dict[str, str] = {
    f"MM_{name.upper()}": _alias(name)
    for name in Settings.model_fields
    if name not in ("lsp", "acp", "mm_configs", "mcp_servers")  # nested keys: files only
}
"""Environment variable -> YAML key, for every setting that can come from the environment."""

HOME_CONFIG = Path(".config/mm/config.yaml")
PROJECT_CONFIG = Path(".mm/config.yaml")


class ConfigError(Exception):
    """A bad file or value: start-up stops with this one line, which names the file, key, reason."""

    def __init__(self, source: str, reason: str, key: str | None = None) -> None:
        self.source = source
        self.key = key
        self.reason = reason
        where = f"{source}: {key}" if key else source
        super().__init__(" ".join(f"mm: {where}: {reason}".split()))


@dataclass
class _Layer:
    """One place settings come from: its label in error messages, and the keys it gives."""

    label: str  # "~/.config/mm/config.yaml", "environment MM_MODEL", "flag --theme"
    data: dict[str, Any]
    one_key: bool = False  # the label already names the key (environment variables, flags)

    def __post_init__(self) -> None:
        # Hide the key from the moment it is read: whatever shows a layer shows stars.
        if isinstance(self.data.get("apiKey"), str):
            from pydantic import SecretStr

            self.data = {**self.data, "apiKey": SecretStr(self.data["apiKey"])}


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


@dataclass
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
    raw = _read_bytes(path, str(PROJECT_CONFIG), required=False)
    if raw is None:
        return None
    from mm_tui.core.trust import digest, read_record, record_path

    layer = _parse_yaml(raw, str(PROJECT_CONFIG))
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
    layers = [_read_yaml(personal, shown_path(personal, home), required=False)]
    if project is not None:
        data = project.data
        if not project.apply_untrusted:
            data = {key: value for key, value in data.items() if key not in project.untrusted}
        layers.append(_Layer(project.label, data))
    if config_file is not None:
        path = Path(config_file).expanduser()
        layers.append(_read_yaml(cwd / path, str(config_file), required=True))
    layers += [
        _Layer(f"environment {var}", {key: environ[var]}, one_key=True)
        for var, key in ENV_NAMES.items()
        if environ.get(var)  # an empty variable counts as unset, as shells make it easy to write
    ]
    if environ.get("OPENAI_API_KEY") and not any("apiKey" in layer.data for layer in layers):
        layers.append(
            _Layer("environment OPENAI_API_KEY", {"apiKey": environ["OPENAI_API_KEY"]}, True)
        )
    layers += [
        _Layer(f"flag --{_kebab(key)}", {key: value}, one_key=True)
        for key, value in (overrides or {}).items()
        if value is not None  # a flag not given
    ]
    layers = [layer for layer in layers if layer.data]
    # A key of an untrusted project file is left out, yet still a secret to keep out of view.
    left_out = () if project is None or project.apply_untrusted else (project.untrusted,)
    read_keys = tuple(
        _secret_text(data["apiKey"])
        for data in [*(layer.data for layer in layers), *left_out]
        if data.get("apiKey") is not None
    )
    if not layers:
        settings = Settings()  # the defaults: nothing to validate, and pydantic is not imported
        if read_keys:
            vars(settings)["_read_keys"] = read_keys
        return settings
    merged: dict[str, Any] = {}
    for layer in layers:
        _merge_into(merged, layer.data)
    from pydantic import ValidationError

    try:
        # YAML spelling only, at every level: accepting `max_output` too would let two spellings
        # of one key fight silently across layers.
        settings = Settings.model_validate(merged, by_alias=True, by_name=False)
    except ValidationError as exc:
        raise _explain(exc, layers) from None
    # From here on, no session file or tool output shows them.
    vars(settings)["_read_keys"] = read_keys
    return settings


def _merge_into(merged: dict[str, Any], data: Mapping[str, Any]) -> None:
    """Lay `data` over `merged`: a mapping over a mapping merges key by key, anything else (a
    list included) replaces. `merged` owns its nested mappings: a layer's are copied, never
    changed."""
    for key, value in data.items():
        below = merged.get(key)
        if isinstance(value, dict) and isinstance(below, dict):
            _merge_into(below, value)
        elif isinstance(value, dict):
            merged[key] = copy = {}
            _merge_into(copy, value)
        else:
            merged[key] = value


def _secret_text(value: Any) -> str:
    """A key as a layer holds it: text, or a SecretStr (whose str() is the stars)."""
    from pydantic import SecretStr  # loaded: the layer made it

    return value.get_secret_value() if isinstance(value, SecretStr) else str(value)


def resolve_dir(settings_value: str, cwd: Path) -> Path:
    """sessionsDir and skillsDir name folders of the project, so relative ones start at cwd."""
    return resolve_path(settings_value, cwd)


OLD_SESSIONS = Path(".mm/sessions")
"""Where sessions were kept before they moved to mm's state folder: still read, never written."""


def project_key(cwd: Path) -> str:
    """A readable name for a working folder that no other folder gets: its name (letters,
    digits, `.`, `_`, `-` kept, at most 40) and 12 hex digits of the SHA-256 of its real path."""
    import hashlib

    real = os.path.realpath(cwd)
    name = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(real))[:40].lstrip(".") or "root"
    return f"{name}-{hashlib.sha256(os.fsencode(real)).hexdigest()[:12]}"


def sessions_folders(
    settings: Settings,
    cwd: Path,
    *,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Path, ...]:
    """Where this folder's sessions are: the first is where new ones are written, the others
    are only read (`--resume`, `/sessions`). `sessionsDir` names one folder (relative ones start
    at `cwd`); by default it is `$XDG_STATE_HOME/mm/sessions/<project key>/`, then the project's
    old `.mm/sessions`."""
    if settings.sessions_dir:
        return (resolve_dir(settings.sessions_dir, cwd),)
    if is_playground(cwd):  # every demo's sessions together: `mm --demo --resume` finds them
        return (user_state_dir(home, environ) / "sessions" / "demo",)
    state = user_state_dir(home, environ) / "sessions" / project_key(cwd)
    return (state, cwd / OLD_SESSIONS)


def known_sessions_folders(
    settings: Settings,
    cwd: Path,
    *,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Path, ...]:
    """The session folders of every project mm knows, for a list not limited to one folder
    (ACP's `session/list` without `cwd`): each project's folder in the state folder (the
    demo's playgrounds apart, unless `cwd` is one), and `cwd`'s own (its old `.mm/sessions`
    too: another project's old folder is known only to that project). An absolute
    `sessionsDir` holds every project's sessions already; a relative one is each project's
    own, and only `cwd`'s is known."""
    own = sessions_folders(settings, cwd, home=home, environ=environ)
    if settings.sessions_dir:
        return own
    root = user_state_dir(home, environ) / "sessions"
    try:
        others = sorted(
            entry for entry in root.iterdir() if entry.name != "demo" and entry.is_dir()
        )
    except OSError:  # no sessions yet, or a state folder that cannot be read
        others = []
    return (*own, *(folder for folder in others if folder not in own))


_loader: type | None = None


def _unique_key_loader() -> type:
    """A SafeLoader that refuses a key given twice: PyYAML keeps the last of two equal keys; in
    a config file that hides a mistake. Made at the first file read: without a config file, mm
    never loads PyYAML (docs/performance.md)."""
    global _loader
    if _loader is not None:
        return _loader
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor` may be overridden
                    continue
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, Hashable):
                    if key in seen:
                        raise yaml.MarkedYAMLError(
                            problem=f'key "{key}" appears twice', problem_mark=key_node.start_mark
                        )
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

    _loader = UniqueKeyLoader
    return _loader


def _read_yaml(path: Path, label: str, *, required: bool) -> _Layer:
    raw = _read_bytes(path, label, required=required)
    return _Layer(label, {}) if raw is None else _parse_yaml(raw, label)


def _read_bytes(path: Path, label: str, *, required: bool) -> bytes | None:
    """A config file's bytes; None when it is missing and not required."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        if required:
            raise ConfigError(label, "no such file") from None
        return None
    except OSError as exc:
        raise ConfigError(label, f"cannot read: {exc.strerror or exc}") from None


def _parse_yaml(raw: bytes, label: str) -> _Layer:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        reason = f"not valid UTF-8: line {line}, byte 0x{raw[exc.start]:02x}"
        raise ConfigError(label, reason) from None
    import yaml

    try:
        data = yaml.load(text, Loader=_unique_key_loader())  # a SafeLoader: no Python objects
    except yaml.YAMLError as exc:
        raise ConfigError(label, f"not valid YAML: {_yaml_reason(exc)}") from None
    if data is None:  # an empty file, or only comments
        return _Layer(label, {})
    if not isinstance(data, dict):
        kind = {list: "a list", str: "a string"}.get(type(data), type(data).__name__)
        raise ConfigError(label, f"the top level should be a mapping of keys, not {kind}")
    for key in data:
        if not isinstance(key, str):
            raise ConfigError(label, f'unknown key "{key}"')
    return _Layer(label, data)


def _yaml_reason(exc: yaml.YAMLError) -> str:
    import yaml  # loaded already: `exc` is one of its errors

    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"line {mark.line + 1}, column {mark.column + 1}: {exc.problem}"
    return str(exc)


def _explain(exc: ValidationError, layers: list[_Layer]) -> ConfigError:
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


def _blame(layers: list[_Layer], loc: tuple[Any, ...]) -> _Layer:
    """The last layer that holds loc, or its nearest parent (a missing key has no value)."""
    for depth in range(len(loc), 0, -1):
        for layer in reversed(layers):
            if _holds(layer.data, loc[:depth]):
                return layer
    return _Layer("settings", {})


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
            known[_loose(_alias(name))] = _alias(name)
    close = difflib.get_close_matches(_loose(key), known, n=1, cutoff=0.8)
    return f' (did you mean "{known[close[0]]}"?)' if close else ""


def _loose(key: str) -> str:
    return key.replace("_", "").replace("-", "").lower()


def _kebab(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", key).lower()
