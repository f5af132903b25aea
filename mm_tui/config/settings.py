"""Every configuration key of the design, spelled as the original program spelled it, as
docs/tools.md does too: `bashTool`, `maxOutput`. Keys keep that camelCase in YAML files
(`baseUrl`, `maxOutput`); in Python they are snake_case attributes (`settings.base_url`,
`settings.max_output`). What each key means: README's configuration section.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from mm_tui.config.fields import yaml_key
from mm_tui.config.validated_dataclass import SettingsBase, after, before, bound
from mm_tui.core.command_env import DEFAULT_EXCLUDE
from mm_tui.core.frozen import described

if TYPE_CHECKING:
    from pydantic import SecretStr

    from mm_tui.core.sandbox import SandboxConfig


@described
class LspServer(SettingsBase):
    name: str
    command: str
    args: list[str] = field(default_factory=lambda: [])
    extensions: list[str] = field(default_factory=lambda: [])


@described
class LspSettings(SettingsBase):
    servers: list[LspServer] = field(default_factory=lambda: [])


@described
class AcpSettings(SettingsBase):
    title: str = "mm"


@described
class McpServer(SettingsBase):
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
    startup_timeout: Annotated[float, bound(gt=0)] = 10
    timeout: Annotated[float, bound(gt=0)] = 60

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

            return re.sub(MCP_VARIABLE, one, value)

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

MCP_VARIABLE = r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}"
"""`${VAR}` or `${VAR:-default}` in an mcpServers entry (see `McpServer.expanded`)."""

MCP_NAME = r"[A-Za-z0-9][A-Za-z0-9_-]*"
"""A server's name: the first part of its tools' names (`files__read`), which a model's tool
name must allow. (These two are compiled by `re` at their first use, with MCP servers only.)"""


@described
class AgentRef(SettingsBase):
    """An entry of mmConfigs: an agent that ask_agent and /ask can hand work to."""

    config: str
    description: str | None = None
    yolo: bool | None = None


def _mcp_names(value: dict[str, McpServer]) -> dict[str, McpServer]:
    from pydantic_core import PydanticCustomError

    for name in value:
        if not re.fullmatch(MCP_NAME, name):
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


RuleAction = Literal["allow", "ask", "deny"]


def _whole_tools(value: Any) -> Any:
    """`read_file: allow` is the pattern that matches every call: `{"*": allow}`."""
    if isinstance(value, dict):
        return {tool: {"*": v} if isinstance(v, str) else v for tool, v in value.items()}
    return value


def _rule_patterns(value: dict[str, Any]) -> dict[str, Any]:
    """A bash pattern is shell words (engine/permission_rules.py reads them so); none empty."""
    import shlex

    from pydantic_core import PydanticCustomError

    for tool, rules in value.items():
        for pattern in rules:
            if not pattern.strip():
                raise PydanticCustomError(
                    "rule_empty", "a pattern of {tool} is empty", {"tool": tool}
                )
            try:
                shlex.split(pattern) if tool == "bash" else None
            except ValueError as exc:
                raise PydanticCustomError(
                    "rule_words",
                    "the bash pattern {pattern} is not shell words: {why}",
                    {"pattern": repr(pattern), "why": str(exc)},
                ) from None
    return value


@described
class Settings(SettingsBase):
    base_url: str | None = None
    model: str | None = None
    provider: str | None = None
    api_key: SecretStr | None = None
    system_prompt: str | None = None
    temperature: float | None = None
    yolo: bool = True
    # ask, auto or plan (engine/permissions.py); unset: auto when yolo, else ask
    mode: Literal["ask", "auto", "plan"] | None = None
    bash_tool: bool = True
    # per tool allow, ask or deny, or patterns with those (engine/permission_rules.py): bash
    # lines by their simple commands, the file tools by path globs
    permissions: Annotated[
        dict[str, dict[str, RuleAction]], before(_whole_tools), after(_rule_patterns)
    ] = field(default_factory=lambda: {})
    # the model's task list, shown to the person (tools/todo.py); auto: declared to a model whose
    # window is known and at least TODO_WINDOW tokens (a tiny model calls it instead of working)
    todo_tool: bool | Literal["auto"] = "auto"
    # Variables kept from the commands the model runs (bash, language servers): case-insensitive
    # globs (core/command_env.py). mm's own key variables are kept from them whatever this says.
    command_env_exclude: Annotated[list[str], before(_patterns_of_a_text)] = field(
        default_factory=lambda: list(DEFAULT_EXCLUDE)
    )
    # The sandbox of the commands the model runs, bash and language servers (core/sandbox.py):
    # auto confines them where Landlock works, strict refuses to run them where it does not.
    sandbox: Annotated[Literal["auto", "off", "strict"], before(_sandbox_mode)] = "auto"
    sandbox_network: bool = True
    sandbox_deny: Annotated[list[str], before(_patterns_of_a_text)] = field(
        default_factory=lambda: []
    )  # beyond ~/.ssh...
    sandbox_write: Annotated[list[str], before(_patterns_of_a_text)] = field(
        default_factory=lambda: []
    )  # more folders
    edit_tools: bool = True
    fetch_content_tool: bool = False
    skills_dir: str = ".mm/skills"
    lsp: LspSettings = field(default_factory=lambda: LspSettings())
    mm_configs: dict[str, AgentRef] = field(default_factory=lambda: {})
    mcp_servers: Annotated[dict[str, McpServer], after(_mcp_names)] = field(
        default_factory=lambda: {}
    )
    max_output: Annotated[int, bound(ge=1)] = 30000
    preview_lines: Annotated[int, bound(ge=0)] = 5
    max_turns: Annotated[int, bound(ge=1)] = 50
    watchdog_timeout: Annotated[float, bound(gt=0)] = 120
    # The model's context in tokens, when the server does not say it (or says it wrong): it
    # overrides what mm reads from the server at start-up. Ollama is asked to run the model
    # with it (engine/ollama_window.py).
    context_window: Annotated[int | None, bound(ge=512)] = None
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
        """What core/sandbox.py needs of these settings: asked at every bash, read_file and
        write_file call, so kept while the four settings it is made of stay as they are (they
        may change: these settings are not frozen)."""
        made = self.__dict__.get("_sandbox_config")
        if made is not None and made[0] == (
            self.sandbox,
            self.sandbox_network,
            self.sandbox_deny,
            self.sandbox_write,
        ):
            return made[1]
        from mm_tui.core.sandbox import SandboxConfig

        config = SandboxConfig(
            mode=self.sandbox,
            network=self.sandbox_network,
            deny=tuple(self.sandbox_deny),
            write=tuple(self.sandbox_write),
        )
        given = (
            self.sandbox,
            self.sandbox_network,
            list(self.sandbox_deny),
            list(self.sandbox_write),
        )
        self.__dict__["_sandbox_config"] = (given, config)
        return config


ENV_NAMES: dict[str, str] = {
    f"MM_{name.upper()}": yaml_key(name)
    for name in Settings.model_fields
    if name
    not in ("lsp", "acp", "mm_configs", "mcp_servers", "permissions")  # nested keys: files only
}
"""Environment variable -> YAML key, for every setting that can come from the environment."""
