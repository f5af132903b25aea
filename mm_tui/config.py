"""Settings: every configuration key of the design, with the reference's spelling.

Keys keep the reference's camelCase in YAML files (`baseUrl`, `maxOutput`); in Python they are
snake_case attributes (`settings.base_url`, `settings.max_output`).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from mm_tui.core.command_env import DEFAULT_EXCLUDE
from mm_tui.core.files import resolve_path
from mm_tui.core.paths import shown_path, user_config_dir

if TYPE_CHECKING:
    import yaml

    from mm_tui.core.sandbox import SandboxConfig


class _Strict(BaseModel):
    """Unknown keys are an error: a misspelt key silently ignored is worse than a clear stop.

    An empty list or mapping is a plain default (pydantic copies it for each model), not
    `default_factory=list`: pydantic reads a factory's signature, and a builtin's costs 20 to
    40 ms at start-up the first time (inspect parses its text signature with tokenize's regex)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class LspServer(_Strict):
    name: str
    command: str
    args: list[str] = []
    extensions: list[str] = []


class LspSettings(_Strict):
    servers: list[LspServer] = []


class AcpSettings(_Strict):
    title: str = "mm"


class McpServer(_Strict):
    """An entry of mcpServers, in the shape every MCP client uses: `command` (with `args`, `env`
    and `cwd`) starts a server on stdio; `url` (with `headers`) reaches one over streamable
    HTTP. `type` may say which (`stdio`, `http`); `startupTimeout` bounds its start (the
    handshake and the list of its tools), `timeout` each call, in seconds."""

    type: str | None = None
    command: str | None = None
    args: list[str] = []
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = {}
    startup_timeout: float = Field(default=30, alias="startupTimeout", gt=0)
    timeout: float = Field(default=60, gt=0)

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
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
        return self

    @property
    def transport(self) -> str:
        """`stdio` or `http`."""
        return "stdio" if self.command else "http"


MCP_TYPES = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamablehttp": "http",
}
"""The values of an mcpServers entry's `type` that mm accepts (lower case, `_` read as `-`);
SSE, the transport the protocol replaced, is not among them."""

MCP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
"""A server's name: the first part of its tools' names (`files__read`), which a model's tool
name must allow."""


class AgentRef(_Strict):
    """An entry of mmConfigs: an agent that ask_agent and /ask can hand work to."""

    config: str
    description: str | None = None
    yolo: bool | None = None


class Settings(_Strict):
    base_url: str | None = Field(default=None, alias="baseUrl")
    model: str | None = None
    provider: str | None = None
    api_key: SecretStr | None = Field(default=None, alias="apiKey")
    system_prompt: str | None = Field(default=None, alias="systemPrompt")
    temperature: float | None = None
    yolo: bool = True
    bash_tool: bool = Field(default=True, alias="bashTool")
    # Variables kept from the commands the model runs (bash, language servers): case-insensitive
    # globs (core/command_env.py). mm's own key variables are kept from them whatever this says.
    command_env_exclude: list[str] = Field(
        default_factory=lambda: list(DEFAULT_EXCLUDE), alias="commandEnvExclude"
    )
    # The sandbox of the commands the model runs, bash and language servers (core/sandbox.py):
    # auto confines them where Landlock works, strict refuses to run them where it does not.
    sandbox: Literal["auto", "off", "strict"] = "auto"
    sandbox_network: bool = Field(default=True, alias="sandboxNetwork")
    sandbox_deny: list[str] = Field(default=[], alias="sandboxDeny")  # beyond ~/.ssh...
    sandbox_write: list[str] = Field(default=[], alias="sandboxWrite")  # more folders
    edit_tools: bool = Field(default=True, alias="editTools")
    fetch_content_tool: bool = Field(default=False, alias="fetchContentTool")
    skills_dir: str = Field(default=".mm/skills", alias="skillsDir")
    lsp: LspSettings = Field(default_factory=LspSettings)
    mm_configs: dict[str, AgentRef] = Field(default={}, alias="mmConfigs")
    mcp_servers: dict[str, McpServer] = Field(default={}, alias="mcpServers")
    max_output: int = Field(default=30000, alias="maxOutput", ge=1)
    preview_lines: int = Field(default=5, alias="previewLines", ge=0)
    max_turns: int = Field(default=50, alias="maxTurns", ge=1)
    watchdog_timeout: float = Field(default=120, alias="watchdogTimeout", gt=0)
    # The model's context in tokens, when the server does not say it (or says it wrong): it
    # overrides what mm reads from the server at start-up.
    context_window: int | None = Field(default=None, alias="contextWindow", ge=512)
    acp: AcpSettings = Field(default_factory=AcpSettings)
    theme: str = "mm-dark"
    sessions_dir: str = Field(default=".mm/sessions", alias="sessionsDir")
    # Every api key the layers gave, even those a later layer overrode: each is still a secret
    # (`cat` shows the file that holds it), kept out of what mm shows and writes.
    _read_keys: tuple[str, ...] = PrivateAttr(default=())

    def secret_values(self) -> tuple[str, ...]:
        """The api keys these settings know, for a `Redactor`: the one in force and every one
        the configuration read."""
        key = self.api_key.get_secret_value() if self.api_key is not None else None
        return (*self._read_keys, key) if key else self._read_keys

    @field_validator("mcp_servers")
    @classmethod
    def _mcp_names(cls, value: dict[str, McpServer]) -> dict[str, McpServer]:
        for name in value:
            if not MCP_NAME.fullmatch(name):
                raise PydanticCustomError(
                    "mcp_name",
                    'server name "{name}" may hold only letters, digits, - and _ (its tools '
                    "are named <server>__<tool>)",
                    {"name": name},
                )
        return value

    def sandbox_config(self) -> SandboxConfig:
        """What core/sandbox.py needs of these settings."""
        from mm_tui.core.sandbox import SandboxConfig

        return SandboxConfig(
            mode=self.sandbox,
            network=self.sandbox_network,
            deny=tuple(self.sandbox_deny),
            write=tuple(self.sandbox_write),
        )

    @field_validator("command_env_exclude", "sandbox_deny", "sandbox_write", mode="before")
    @classmethod
    def _patterns_of_a_text(cls, value: Any) -> Any:
        """One text (MM_COMMAND_ENV_EXCLUDE, MM_SANDBOX_DENY, or a YAML string) holds
        comma-separated patterns or paths."""
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value


# --- Loading ------------------------------------------------------------------------------------
#
# Each place a setting can come from is a layer: a label for error messages and the raw keys it
# gives, spelt as in YAML. The layers are merged (nested mappings key by key, later layers
# winning) and the result is validated once, so a value that a later layer replaces is never
# judged; when the result is invalid, the error is traced back to the last layer that holds the
# offending key.

ENV_NAMES: dict[str, str] = {
    f"MM_{name.upper()}": field.alias or name
    for name, field in Settings.model_fields.items()
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
            self.data = {**self.data, "apiKey": SecretStr(self.data["apiKey"])}


def load_settings(
    *,
    config_file: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    cwd: Path | None = None,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Merge defaults, ~/.config/mm (`core/paths.py`: $XDG_CONFIG_HOME/mm when set), ./.mm, the
    --config agent file, MM_* variables and flags.

    Later layers win and nested mappings (lsp, acp, mmConfigs) merge key by key, so a project file
    can change one agent of mmConfigs without repeating the others. Raises ConfigError.
    """
    cwd = Path.cwd() if cwd is None else cwd
    home = Path.home() if home is None else home
    environ = os.environ if environ is None else environ

    personal = user_config_dir(home, environ) / HOME_CONFIG.name
    layers = [
        _read_yaml(personal, shown_path(personal, home), required=False),
        _read_yaml(cwd / PROJECT_CONFIG, str(PROJECT_CONFIG), required=False),
    ]
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
    read_keys = tuple(
        _secret_text(layer.data["apiKey"])
        for layer in layers
        if layer.data.get("apiKey") is not None
    )
    merged: dict[str, Any] = {}
    for layer in layers:
        _merge_into(merged, layer.data)
    try:
        # YAML spelling only, at every level: accepting `max_output` too would let two spellings
        # of one key fight silently across layers.
        settings = Settings.model_validate(merged, by_alias=True, by_name=False)
    except ValidationError as exc:
        raise _explain(exc, layers) from None
    settings._read_keys = read_keys  # from here on, no session file or tool output shows them
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
    return value.get_secret_value() if isinstance(value, SecretStr) else str(value)


def resolve_dir(settings_value: str, cwd: Path) -> Path:
    """sessionsDir and skillsDir name folders of the project, so relative ones start at cwd."""
    return resolve_path(settings_value, cwd)


_loader: type | None = None


def _unique_key_loader() -> type:
    """A SafeLoader that refuses a key given twice: PyYAML keeps the last of two equal keys; in
    a config file that hides a mistake. Made at the first file read: without a config file, mm
    never loads PyYAML (10 to 15 ms of start-up)."""
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
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        if required:
            raise ConfigError(label, "no such file") from None
        return _Layer(label, {})
    except OSError as exc:
        raise ConfigError(label, f"cannot read: {exc.strerror or exc}") from None
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
    error = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = tuple(error["loc"])
    layer = _blame(layers, loc)
    dotted = ".".join(str(part) for part in loc)
    if error["type"] == "extra_forbidden":
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


def _did_you_mean(key: str) -> str:
    known: dict[str, str] = {}
    for model in (Settings, LspSettings, LspServer, AcpSettings, AgentRef, McpServer):
        for name, field in model.model_fields.items():
            known[_loose(field.alias or name)] = field.alias or name
    close = difflib.get_close_matches(_loose(key), known, n=1, cutoff=0.8)
    return f' (did you mean "{known[close[0]]}"?)' if close else ""


def _loose(key: str) -> str:
    return key.replace("_", "").replace("-", "").lower()


def _kebab(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", key).lower()
