"""Configuration: defaults, the merge order of the design, env names, and one-line errors."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mm_tui.config import (
    ENV_NAMES,
    ConfigError,
    Settings,
    load_settings,
    read_project,
    resolve_dir,
)
from mm_tui.config.files import Layer
from mm_tui.config.places import environment_layers, overlay
from mm_tui.core.command_env import DEFAULT_EXCLUDE

ROOT = Path(__file__).resolve().parents[2]

SECRET = "sk-test-0123456789-very-secret"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    return path


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def home_file(home: Path, text: str | bytes) -> Path:
    return write(home / ".config/mm/config.yaml", text)


def proj_file(proj: Path, text: str | bytes) -> Path:
    return write(proj / ".mm/config.yaml", text)


@pytest.fixture
def load(home: Path, proj: Path):
    """load_settings isolated from the machine: no real home, folder or environment. The
    project's file is applied whole, as after the person trusted it (test_trust.py tests
    what an untrusted one gives)."""

    def _load(**kwargs: Any) -> Settings:
        kwargs.setdefault("cwd", proj)
        kwargs.setdefault("home", home)
        kwargs.setdefault("environ", {})
        if "project" not in kwargs:
            project = read_project(kwargs["cwd"], home=kwargs["home"], environ=kwargs["environ"])
            if project is not None:
                project.apply_untrusted = True
            kwargs["project"] = project
        return load_settings(**kwargs)

    return _load


def error_of(load, **kwargs: Any) -> str:
    with pytest.raises(ConfigError) as info:
        load(**kwargs)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("mm: ")
    return message


# --- defaults ------------------------------------------------------------------------------------

DEFAULTS: dict[str, Any] = {
    "base_url": None,
    "model": None,
    "provider": None,
    "api_key": None,
    "system_prompt": None,
    "temperature": None,
    "yolo": True,
    "mode": None,
    "bash_tool": True,
    "todo_tool": "auto",
    "command_env_exclude": list(DEFAULT_EXCLUDE),
    "sandbox": "auto",
    "sandbox_network": True,
    "sandbox_deny": [],
    "sandbox_write": [],
    "edit_tools": True,
    "fetch_content_tool": False,
    "skills_dir": ".mm/skills",
    "lsp": {"servers": []},
    "mm_configs": {},
    "mcp_servers": {},
    "permissions": {},
    "max_output": 30000,
    "preview_lines": 5,
    "max_turns": 50,
    "watchdog_timeout": 120,
    "context_window": None,
    "acp": {"title": "mm"},
    "theme": "mm-dark",
    "sessions_dir": None,
}


def test_the_defaults_table_covers_every_key() -> None:
    assert set(DEFAULTS) == set(Settings.model_fields)


@pytest.mark.parametrize(("attr", "default"), DEFAULTS.items())
def test_default(load, attr: str, default: Any) -> None:
    value = getattr(load(), attr)
    if hasattr(value, "model_dump"):
        value = value.model_dump()
    assert value == default


def test_the_result_is_a_plain_settings(load) -> None:
    settings = load(overrides={"model": "m"})
    assert type(settings) is Settings
    assert settings == Settings(model="m")


def test_nothing_to_read_is_fine(tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path, home=tmp_path / "nowhere", environ={})
    assert settings == Settings()


# --- merge order ---------------------------------------------------------------------------------

LAYERS = ["home", "project", "config_file", "environment", "flags"]


@pytest.mark.parametrize("top", range(len(LAYERS)))
def test_each_layer_overrides_the_ones_before(load, home: Path, proj: Path, top: int) -> None:
    """With the layers up to `top` each setting `model`, the value of `top` wins."""
    kwargs: dict[str, Any] = {}
    for layer in LAYERS[: top + 1]:
        if layer == "home":
            home_file(home, "model: home\n")
        elif layer == "project":
            proj_file(proj, "model: project\n")
        elif layer == "config_file":
            kwargs["config_file"] = write(proj / "agent.yaml", "model: config_file\n")
        elif layer == "environment":
            kwargs["environ"] = {"MM_MODEL": "environment"}
        else:
            kwargs["overrides"] = {"model": "flags"}
    assert load(**kwargs).model == LAYERS[top]


def test_a_layer_changes_only_the_keys_it_names(load, home: Path, proj: Path) -> None:
    home_file(home, "model: m\ntheme: t\nmaxTurns: 7\n")
    proj_file(proj, "theme: u\n")
    settings = load(environ={"MM_MAX_TURNS": "9"})
    assert (settings.model, settings.theme, settings.max_turns) == ("m", "u", 9)


def test_nested_mappings_merge_key_by_key(load, home: Path, proj: Path) -> None:
    home_file(
        home,
        """
mmConfigs:
  tester: {config: tester.yaml, description: runs the tests}
  writer: {config: writer.yaml, yolo: true}
acp: {title: from-home}
lsp:
  servers:
    - {name: pyright, command: pyright-langserver, args: [--stdio], extensions: [.py]}
""",
    )
    proj_file(
        proj,
        """
mmConfigs:
  writer: {yolo: false}
  reviewer: {config: reviewer.yaml}
lsp:
  servers:
    - {name: gopls, command: gopls}
""",
    )
    agent = write(proj / "agent.yaml", "acp: {title: agent}\n")
    settings = load(config_file=agent)
    assert settings.mm_configs["tester"].description == "runs the tests"
    assert settings.mm_configs["writer"].config == "writer.yaml"
    assert settings.mm_configs["writer"].yolo is False
    assert settings.mm_configs["reviewer"].config == "reviewer.yaml"
    # a list is a value: the later one replaces the earlier one whole
    assert [server.name for server in settings.lsp.servers] == ["gopls"]
    assert settings.acp.title == "agent"


def test_a_bad_value_replaced_by_a_later_layer_is_not_an_error(load, home: Path) -> None:
    home_file(home, "maxOutput: lots\n")
    assert load(overrides={"maxOutput": 10}).max_output == 10


def test_flags_of_none_are_not_given(load, proj: Path) -> None:
    proj_file(proj, "model: m\nyolo: false\n")
    settings = load(overrides={"model": None, "baseUrl": None, "yolo": None, "theme": None})
    assert (settings.model, settings.yolo) == ("m", False)


def test_a_false_flag_is_given(load, proj: Path) -> None:
    proj_file(proj, "yolo: true\n")
    assert load(overrides={"yolo": False}).yolo is False


def test_flags_use_the_yaml_spelling(load) -> None:
    settings = load(overrides={"baseUrl": "http://h/v1", "theme": "nord", "model": "x"})
    assert (settings.base_url, settings.theme, settings.model) == ("http://h/v1", "nord", "x")


def test_a_relative_config_file_is_found_from_cwd(load, proj: Path) -> None:
    write(proj / "agents/a.yaml", "model: a\n")
    assert load(config_file="agents/a.yaml").model == "a"
    assert load(config_file=proj / "agents/a.yaml").model == "a"


# --- files -------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "---\n"])
def test_an_empty_file_is_no_settings(load, proj: Path, text: str) -> None:
    proj_file(proj, text)
    assert load() == Settings()


def test_a_byte_order_mark_is_accepted(load, proj: Path) -> None:
    proj_file(proj, "\ufeffmodel: m\n".encode())
    assert load().model == "m"


def test_yaml_anchors_and_merge_keys_work(load, proj: Path) -> None:
    proj_file(
        proj,
        """
mmConfigs:
  a: &base {config: a.yaml, yolo: true}
  b:
    <<: *base
    config: b.yaml
""",
    )
    settings = load()
    assert (settings.mm_configs["b"].config, settings.mm_configs["b"].yolo) == ("b.yaml", True)


def test_every_key_is_read_from_a_file(load, proj: Path) -> None:
    proj_file(
        proj,
        """
baseUrl: http://localhost:1234/v1
model: qwen
provider: LM Studio
apiKey: k
systemPrompt: be brief
temperature: 0.2
yolo: no
bashTool: false
editTools: false
fetchContentTool: true
skillsDir: skills
lsp: {servers: [{name: n, command: c, args: [a], extensions: [.x]}]}
mmConfigs: {t: {config: t.yaml, description: d, yolo: false}}
maxOutput: 100
previewLines: 0
maxTurns: 3
watchdogTimeout: 1.5
acp: {title: T}
theme: nord
sessionsDir: s
""",
    )
    s = load()
    assert (s.base_url, s.model, s.provider) == ("http://localhost:1234/v1", "qwen", "LM Studio")
    assert s.api_key is not None and s.api_key.get_secret_value() == "k"
    assert (s.system_prompt, s.temperature, s.yolo) == ("be brief", 0.2, False)
    assert (s.bash_tool, s.edit_tools, s.fetch_content_tool) == (False, False, True)
    assert s.skills_dir == "skills"
    assert s.lsp.servers[0].model_dump() == {
        "name": "n",
        "command": "c",
        "args": ["a"],
        "extensions": [".x"],
    }
    assert s.mm_configs["t"].model_dump() == {"config": "t.yaml", "description": "d", "yolo": False}
    assert (s.max_output, s.preview_lines, s.max_turns) == (100, 0, 3)
    assert (s.watchdog_timeout, s.acp.title, s.theme, s.sessions_dir) == (1.5, "T", "nord", "s")


# --- environment -------------------------------------------------------------------------------

ENV_CASES: list[tuple[str, str, str, Any]] = [
    ("MM_BASE_URL", "http://e/v1", "base_url", "http://e/v1"),
    ("MM_MODEL", "em", "model", "em"),
    ("MM_PROVIDER", "ep", "provider", "ep"),
    ("MM_YOLO", "false", "yolo", False),
    ("MM_MODE", "plan", "mode", "plan"),
    ("MM_MAX_OUTPUT", "123", "max_output", 123),
    ("MM_MAX_TURNS", "4", "max_turns", 4),
    ("MM_WATCHDOG_TIMEOUT", "2.5", "watchdog_timeout", 2.5),
    ("MM_CONTEXT_WINDOW", "8192", "context_window", 8192),
    ("MM_THEME", "nord", "theme", "nord"),
    ("MM_SESSIONS_DIR", "/tmp/s", "sessions_dir", "/tmp/s"),
    ("MM_SKILLS_DIR", "sk", "skills_dir", "sk"),
    ("MM_SYSTEM_PROMPT", "hi", "system_prompt", "hi"),
    ("MM_TEMPERATURE", "0.7", "temperature", 0.7),
    ("MM_BASH_TOOL", "0", "bash_tool", False),
    ("MM_TODO_TOOL", "0", "todo_tool", False),
    ("MM_EDIT_TOOLS", "no", "edit_tools", False),
    ("MM_FETCH_CONTENT_TOOL", "yes", "fetch_content_tool", True),
    ("MM_PREVIEW_LINES", "9", "preview_lines", 9),
    ("MM_COMMAND_ENV_EXCLUDE", "*_TOKEN, AWS_*", "command_env_exclude", ["*_TOKEN", "AWS_*"]),
    ("MM_SANDBOX", "strict", "sandbox", "strict"),
    ("MM_SANDBOX_NETWORK", "false", "sandbox_network", False),
    ("MM_SANDBOX_DENY", "~/a, /b", "sandbox_deny", ["~/a", "/b"]),
    ("MM_SANDBOX_WRITE", "~/go", "sandbox_write", ["~/go"]),
]


def test_the_environment_names() -> None:
    assert set(ENV_NAMES) == {case[0] for case in ENV_CASES} | {"MM_API_KEY"}


@pytest.mark.parametrize(("var", "raw", "attr", "value"), ENV_CASES)
def test_environment_variable(load, var: str, raw: str, attr: str, value: Any) -> None:
    assert getattr(load(environ={var: raw}), attr) == value


def test_other_mm_variables_are_ignored(load) -> None:
    environ = {"MM_ASK_DEPTH": "2", "MM_LSP": "x", "MM_ACP": "x", "MM_MM_CONFIGS": "x"}
    assert load(environ=environ) == Settings()


def test_an_empty_variable_is_unset(load, proj: Path) -> None:
    proj_file(proj, "model: m\n")
    assert load(environ={"MM_MODEL": "", "MM_MAX_OUTPUT": ""}).model == "m"


def test_mm_api_key(load) -> None:
    settings = load(environ={"MM_API_KEY": SECRET})
    assert settings.api_key is not None and settings.api_key.get_secret_value() == SECRET


def test_openai_api_key_is_the_fallback(load) -> None:
    settings = load(environ={"OPENAI_API_KEY": SECRET})
    assert settings.api_key is not None and settings.api_key.get_secret_value() == SECRET


@pytest.mark.parametrize("where", ["home", "project", "config_file", "MM_API_KEY", "flags"])
def test_openai_api_key_never_beats_an_api_key_set_elsewhere(
    load, home: Path, proj: Path, where: str
) -> None:
    kwargs: dict[str, Any] = {"environ": {"OPENAI_API_KEY": "openai"}}
    if where == "home":
        home_file(home, "apiKey: mine\n")
    elif where == "project":
        proj_file(proj, "apiKey: mine\n")
    elif where == "config_file":
        kwargs["config_file"] = write(proj / "a.yaml", "apiKey: mine\n")
    elif where == "MM_API_KEY":
        kwargs["environ"]["MM_API_KEY"] = "mine"
    else:
        kwargs["overrides"] = {"apiKey": "mine"}
    settings = load(**kwargs)
    assert settings.api_key is not None and settings.api_key.get_secret_value() == "mine"


# --- errors: one line naming the file, the key and the reason ----------------------------------

INT_REASON = "Input should be a valid integer, unable to parse string as an integer"


@pytest.mark.parametrize(
    ("written", "mode"),
    [
        ("off", "off"),
        ("no", "off"),
        ("false", "off"),
        ("on", "auto"),
        ("true", "auto"),
        ('"off"', "off"),
        ("strict", "strict"),
    ],
)
def test_sandbox_off_unquoted_is_off(load, proj: Path, written: str, mode: str) -> None:
    """YAML reads an unquoted `off` as false: `sandbox: off`, as the README and the sandbox's
    own refusal advise, stopped mm from starting (`Input should be 'auto', 'off' or 'strict'`)."""
    proj_file(proj, f"sandbox: {written}\n")
    assert load().sandbox == mode


def test_wrong_type_in_the_project_file(load, proj: Path) -> None:
    proj_file(proj, "maxOutput: lots\n")
    assert error_of(load) == f"mm: .mm/config.yaml: maxOutput: {INT_REASON}"


def test_unknown_key_in_the_home_file(load, home: Path) -> None:
    home_file(home, "maxOuptut: 3\n")
    assert error_of(load) == (
        'mm: ~/.config/mm/config.yaml: unknown key "maxOuptut" (did you mean "maxOutput"?)'
    )


def test_unknown_key_without_a_near_miss(load, home: Path) -> None:
    home_file(home, "colour: red\n")
    assert error_of(load) == 'mm: ~/.config/mm/config.yaml: unknown key "colour"'


def test_unknown_nested_key_names_the_dotted_path(load, proj: Path) -> None:
    proj_file(proj, "lsp:\n  servers:\n    - name: py\n      comand: pyright\n")
    message = error_of(load)
    assert message.startswith('mm: .mm/config.yaml: unknown key "lsp.servers.0.comand"')
    assert '"command"' in message  # the hint


def test_unknown_key_under_an_agent(load, proj: Path) -> None:
    proj_file(proj, "mmConfigs:\n  t:\n    config: t.yaml\n    descripton: d\n")
    assert 'unknown key "mmConfigs.t.descripton"' in error_of(load)


def test_snake_case_is_not_the_yaml_spelling(load, proj: Path) -> None:
    proj_file(proj, "max_output: 3\n")
    assert error_of(load) == (
        'mm: .mm/config.yaml: unknown key "max_output" (did you mean "maxOutput"?)'
    )


def test_a_key_that_is_not_a_name(load, proj: Path) -> None:
    proj_file(proj, "1: one\n")
    assert error_of(load) == 'mm: .mm/config.yaml: unknown key "1"'


def test_missing_nested_key(load, proj: Path) -> None:
    proj_file(proj, "mmConfigs:\n  t:\n    yolo: true\n")
    assert error_of(load) == "mm: .mm/config.yaml: mmConfigs.t.config: Field required"


def test_a_missing_key_is_blamed_on_the_last_file_that_touched_its_parent(
    load, home: Path, proj: Path
) -> None:
    home_file(home, "mmConfigs:\n  t: {description: d}\n")
    proj_file(proj, "mmConfigs:\n  t: {yolo: true}\n")
    assert error_of(load) == "mm: .mm/config.yaml: mmConfigs.t.config: Field required"


def test_out_of_range(load, proj: Path) -> None:
    proj_file(proj, "maxTurns: 0\n")
    assert error_of(load) == (
        "mm: .mm/config.yaml: maxTurns: Input should be greater than or equal to 1"
    )


def test_wrong_type_of_a_nested_mapping(load, home: Path) -> None:
    home_file(home, "lsp: [pyright]\n")
    message = error_of(load)
    assert message.startswith(
        "mm: ~/.config/mm/config.yaml: lsp: Input should be a valid dictionary"
    )


def test_the_error_is_blamed_on_the_file_that_holds_it(load, home: Path, proj: Path) -> None:
    home_file(home, "maxTurns: many\n")
    proj_file(proj, "model: m\n")
    assert error_of(load).startswith("mm: ~/.config/mm/config.yaml: maxTurns: ")


def test_several_problems_still_make_one_line(load, proj: Path) -> None:
    proj_file(proj, "maxTurns: x\nmaxOutput: y\nbogus: 1\ntheme: [1]\n")
    assert error_of(load) == 'mm: .mm/config.yaml: unknown key "bogus"'


def test_invalid_yaml(load, proj: Path) -> None:
    write(proj / "x.yaml", "model: a\nbaseUrl: b\nx: y: z\n")
    assert error_of(load, config_file="./x.yaml") == (
        "mm: ./x.yaml: not valid YAML: line 3, column 5: mapping values are not allowed here"
    )


def test_invalid_yaml_across_lines_is_one_line(load, proj: Path) -> None:
    proj_file(proj, 'model: "unclosed\n\n')
    message = error_of(load)
    assert message.startswith("mm: .mm/config.yaml: not valid YAML: line ")


def test_a_duplicate_key(load, proj: Path) -> None:
    proj_file(proj, "model: a\ntheme: t\nmodel: b\n")
    assert error_of(load) == (
        'mm: .mm/config.yaml: not valid YAML: line 3, column 1: key "model" appears twice'
    )


def test_python_tags_are_refused(load, proj: Path) -> None:
    proj_file(proj, "model: !!python/object/apply:os.system [echo hi]\n")
    assert error_of(load).startswith("mm: .mm/config.yaml: not valid YAML: line 1, column 8: ")


@pytest.mark.parametrize(
    ("text", "kind"), [("- a\n- b\n", "a list"), ("just words\n", "a string"), ("3\n", "int")]
)
def test_the_top_level_must_be_a_mapping(load, proj: Path, text: str, kind: str) -> None:
    proj_file(proj, text)
    assert error_of(load) == (
        f"mm: .mm/config.yaml: the top level should be a mapping of keys, not {kind}"
    )


def test_not_utf8(load, home: Path) -> None:
    home_file(home, b"model: a\ntheme: \xff\xfe\n")
    assert error_of(load) == "mm: ~/.config/mm/config.yaml: not valid UTF-8: line 2, byte 0xff"


def test_a_missing_config_file(load) -> None:
    assert error_of(load, config_file="./missing.yaml") == "mm: ./missing.yaml: no such file"


def test_a_config_file_that_is_a_folder(load, proj: Path) -> None:
    (proj / "agents").mkdir()
    assert error_of(load, config_file="agents").startswith("mm: agents: cannot read: ")


def test_a_bad_environment_variable_is_named(load) -> None:
    assert error_of(load, environ={"MM_MAX_OUTPUT": "lots"}) == (
        f"mm: environment MM_MAX_OUTPUT: {INT_REASON}"
    )


def test_a_bad_boolean_in_the_environment(load) -> None:
    message = error_of(load, environ={"MM_YOLO": "perhaps"})
    assert (
        message
        == "mm: environment MM_YOLO: Input should be a valid boolean, unable to interpret input"
    )


def test_a_bad_flag_is_named(load) -> None:
    assert error_of(load, overrides={"maxTurns": "x"}) == f"mm: flag --max-turns: {INT_REASON}"


def test_config_error_keeps_its_parts(load, proj: Path) -> None:
    proj_file(proj, "maxOutput: lots\n")
    with pytest.raises(ConfigError) as info:
        load()
    assert (info.value.source, info.value.key, info.value.reason) == (
        ".mm/config.yaml",
        "maxOutput",
        INT_REASON,
    )


# --- the api key is never shown ----------------------------------------------------------------


def test_the_api_key_is_never_in_repr_or_dumps(load) -> None:
    settings = load(environ={"MM_API_KEY": SECRET})
    assert settings.api_key is not None and settings.api_key.get_secret_value() == SECRET
    for shown in (
        repr(settings),
        str(settings),
        settings.model_dump_json(),
        settings.model_dump_json(by_alias=True),
        str(settings.model_dump()),
        str(settings.model_dump(mode="json")),
    ):
        assert SECRET not in shown


def test_the_api_key_is_not_in_an_error(load, proj: Path) -> None:
    proj_file(proj, "apiKey: 1234567890123\n")  # a number, so the key is invalid
    message = error_of(load)
    assert message == "mm: .mm/config.yaml: apiKey: Input should be a valid string"
    assert "1234567890123" not in message


def test_the_api_key_is_not_logged(load, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        load(environ={"MM_API_KEY": SECRET, "OPENAI_API_KEY": SECRET + "2"}, overrides={})
        load(environ={"OPENAI_API_KEY": SECRET})
    assert SECRET not in caplog.text


# --- the places, laid over each other by pydantic-settings ---------------------------------------


def test_an_environment_variable_and_file_keys_together(load, home: Path, proj: Path) -> None:
    home_file(home, "model: m\nmmConfigs: {t: {config: t.yaml}}\n")
    proj_file(proj, "theme: nord\nmaxTurns: 3\n")
    settings = load(environ={"MM_MAX_OUTPUT": "77", "MM_MAX_TURNS": "8"}, overrides={"yolo": False})
    assert (settings.model, settings.theme, settings.max_output) == ("m", "nord", 77)
    assert (settings.max_turns, settings.yolo) == (8, False)
    assert settings.mm_configs["t"].config == "t.yaml"
    assert settings.model_fields_set == {
        "model",
        "mm_configs",
        "theme",
        "max_turns",
        "max_output",
        "yolo",
    }


def test_a_flag_beats_the_environment_which_beats_the_files(load, proj: Path) -> None:
    proj_file(proj, "theme: file\nmodel: file\nbaseUrl: http://file/v1\n")
    settings = load(environ={"MM_THEME": "env", "MM_MODEL": "env"}, overrides={"theme": "flag"})
    assert (settings.theme, settings.model, settings.base_url) == ("flag", "env", "http://file/v1")


def test_a_bad_file_value_replaced_by_the_environment_is_not_an_error(load, proj: Path) -> None:
    proj_file(proj, "maxOutput: lots\n")
    assert load(environ={"MM_MAX_OUTPUT": "5"}).max_output == 5


def test_a_bad_environment_value_is_blamed_on_it_not_on_a_file(load, proj: Path) -> None:
    proj_file(proj, "maxOutput: 10\n")
    assert error_of(load, environ={"MM_MAX_OUTPUT": "lots"}) == (
        f"mm: environment MM_MAX_OUTPUT: {INT_REASON}"
    )


@pytest.mark.parametrize(
    ("var", "raw", "reason"),
    [
        ("MM_WATCHDOG_TIMEOUT", "soon", "Input should be a valid number, unable to parse string"),
        ("MM_SANDBOX", "maybe", "Input should be 'auto', 'off' or 'strict'"),
        ("MM_CONTEXT_WINDOW", "100", "Input should be greater than or equal to 512"),
    ],
)
def test_a_malformed_environment_value(load, var: str, raw: str, reason: str) -> None:
    assert error_of(load, environ={var: raw}).startswith(f"mm: environment {var}: {reason}")


def test_merging_leaves_each_layer_as_read(load, home: Path, proj: Path) -> None:
    """The merge copies the mappings it changes: the blame still finds the one layer that
    holds a key (here the home file's agent, merged into by the project file's)."""
    home_file(home, "mmConfigs:\n  t: {config: t.yaml, yolo: maybe}\n")
    proj_file(proj, "mmConfigs:\n  t: {description: d}\n")
    assert error_of(load) == (
        "mm: ~/.config/mm/config.yaml: mmConfigs.t.yolo: "
        "Input should be a valid boolean, unable to interpret input"
    )
    proj_file(proj, "mmConfigs:\n  t: {description: d, yolo: true}\n")
    assert load().mm_configs["t"].model_dump() == {
        "config": "t.yaml",
        "description": "d",
        "yolo": True,
    }


def test_snake_case_is_refused_in_a_nested_mapping_too(load, proj: Path) -> None:
    proj_file(proj, "mcpServers:\n  x: {command: c, startup_timeout: 5}\n")
    assert error_of(load) == (
        'mm: .mm/config.yaml: unknown key "mcpServers.x.startup_timeout" '
        '(did you mean "startupTimeout"?)'
    )


_keys = st.sampled_from(["model", "theme", "maxOutput", "apiKey", "yolo", "x", "sandboxDeny"])
_flat_values = st.one_of(
    st.text(max_size=5), st.integers(), st.booleans(), st.none(), st.lists(st.integers())
)
_flat_layers = st.lists(
    st.builds(Layer, st.text(max_size=3), st.dictionaries(_keys, _flat_values, max_size=4)),
    max_size=5,
)


@given(_flat_layers)
def test_flat_layers_are_laid_over_each_other_as_pydantic_settings_lays_them(
    layers: list[Layer],
) -> None:
    """`places.overlay`, mm's merge of layers that hold no mapping (docs/performance.md), gives
    what pydantic-settings' merge gives them: the same keys, values and order."""
    from mm_tui.config.sources import merged

    laid = overlay(layers)
    assert laid is not None
    assert list(laid.items()) == list(merged(layers).items())


def test_a_mapping_is_left_to_pydantic_settings() -> None:
    assert overlay([Layer("a", {"model": "m"}), Layer("b", {"lsp": {"servers": []}})]) is None


_variables = st.dictionaries(
    st.sampled_from(["MM_MODEL", "MM_THEME", "MM_MAX_OUTPUT", "mm_model", "OTHER"]),
    st.one_of(st.sampled_from(["", " ", "null", '{"a": 1}', "[1, 2]", " 5 "]), st.text()),
)


@given(_variables)
def test_variables_are_read_as_pydantic_settings_environment_source_reads_them(
    environ: dict[str, str],
) -> None:
    """`places.environment_layers` reads mm's variables as the library's environment source
    does for fields of any type: by the exact name, the text as it is, an empty one unset."""
    from pydantic import create_model
    from pydantic_settings import BaseSettings, EnvSettingsSource
    from pydantic_settings.sources.utils import parse_env_vars

    names = {"MM_MODEL": "model", "MM_THEME": "theme", "MM_MAX_OUTPUT": "maxOutput"}
    fields: Any = {name: (Any, None) for name in names}
    model = create_model("Variables", __base__=BaseSettings, **fields)

    class Library(EnvSettingsSource):
        def _load_env_vars(self) -> Any:
            return parse_env_vars(environ, True, True, None)

    read = Library(model, case_sensitive=True, env_ignore_empty=True)()
    layers = environment_layers(names, environ)
    assert [next(iter(layer.data.items())) for layer in layers] == [
        (names[var], value) for var, value in read.items()
    ]
    assert [layer.label for layer in layers] == [f"environment {var}" for var in read]


def test_settings_made_in_code_still_take_the_python_names() -> None:
    assert Settings(max_output=3, base_url="http://h/v1").max_output == 3


def loaded_modules(
    setup: str, home: Path, proj: Path, modules: tuple[str, ...] = ("pydantic", "pydantic_settings")
) -> str:
    """Which of `modules` (pydantic and pydantic-settings) a fresh process has loaded once it
    has read the settings (`setup` runs first, in the project's folder)."""
    code = (
        f"import os, sys; from pathlib import Path; {setup}; "
        "from mm_tui.config import load_settings; "
        f"load_settings(cwd=Path({str(proj)!r}), home=Path({str(home)!r}), environ=os.environ); "
        f"print(sorted(m for m in {modules!r} if m in sys.modules))"
    )
    # this checkout's mm, whichever one is installed: the code runs in the home folder
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return done.stdout.strip()


def test_nothing_to_read_loads_neither_pydantic_nor_pydantic_settings(
    home: Path, proj: Path
) -> None:
    assert loaded_modules("pass", home, proj) == "[]"


PERSONAL_FILE = "Path('.config/mm').mkdir(parents=True); Path('.config/mm/config.yaml')"


@pytest.mark.parametrize(
    ("setup", "loaded"),
    [
        (f"{PERSONAL_FILE}.write_text('')", "[]"),
        (f"{PERSONAL_FILE}.write_text('theme: nord\\nmaxOutput: 5\\n')", "[]"),
        ("os.environ['MM_THEME'] = 'nord'", "[]"),
        ("os.environ['MM_MAX_OUTPUT'] = '5'", "['pydantic']"),
        ("os.environ['OPENAI_API_KEY'] = 'k'", "['pydantic']"),
    ],
    ids=["an empty file", "plain keys", "a text variable", "a number in a text", "a secret"],
)
def test_plain_values_are_validated_without_pydantic(
    home: Path, proj: Path, setup: str, loaded: str
) -> None:
    """Places whose keys hold no mapping are laid over each other without pydantic-settings,
    and values already of their field's type are taken without pydantic (docs/performance.md);
    a value to convert (a number written as text) or a secret goes to pydantic."""
    setup = f"os.chdir({str(home)!r}); {setup}"
    assert loaded_modules(setup, home, proj) == loaded


@pytest.mark.parametrize(
    ("text", "loaded"),
    [
        ("theme: nord\nmaxOutput: 5  # short\n", "[]"),
        ("baseUrl: http://localhost:11434/v1\nmodel: qwen3:8b\n", "[]"),
        ("maxOutput: 5\nyolo: yes\n", "['yaml']"),
        ("", "[]"),  # a file made to be filled later, or all of it commented out
        ("\n# theme: nord\n  # maxOutput: 5\n", "[]"),
    ],
)
def test_a_file_of_plain_keys_is_read_without_pyyaml(
    home: Path, proj: Path, text: str, loaded: str
) -> None:
    """`key: value` lines are read as PyYAML reads them (`core/flat_yaml.py`), without it; a
    file that is more than that (here YAML 1.1's `yes`) goes to PyYAML."""
    setup = f"os.chdir({str(home)!r}); {PERSONAL_FILE}.write_text({text!r})"
    assert loaded_modules(setup, home, proj, ("yaml",)) == loaded


def test_a_nested_mapping_is_merged_by_pydantic_settings(home: Path, proj: Path) -> None:
    setup = f"os.chdir({str(home)!r}); {PERSONAL_FILE}.write_text('lsp: {{servers: []}}\\n')"
    assert loaded_modules(setup, home, proj) == "['pydantic', 'pydantic_settings']"


def test_the_places_are_merged_by_pydantic_settings_in_mms_order(
    load, home: Path, proj: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every place goes through pydantic-settings' merge: without it, nothing is set."""
    from mm_tui.config import sources

    home_file(
        home, "model: home\ntheme: home\nmaxTurns: 2\nlsp: {servers: [{name: a, command: a}]}\n"
    )
    proj_file(proj, "theme: project\nlsp: {servers: []}\n")
    config = write(proj / "agent.yaml", "maxTurns: 3\nmaxOutput: 4\n")
    given = {"environ": {"MM_MAX_OUTPUT": "5", "MM_PREVIEW_LINES": "6"}, "config_file": config}
    settings = load(**given, overrides={"previewLines": 7})
    assert (settings.model, settings.theme, settings.max_turns) == ("home", "project", 3)
    assert (settings.max_output, settings.preview_lines, settings.lsp.servers) == (5, 7, [])
    monkeypatch.setattr(sources.MergedSettings, "model_extra", {})
    assert load(**given).model_fields_set == set()


@pytest.mark.parametrize(
    "key",
    ["_build_sources", "__class__", "model_extra", "model_config", "__pydantic_extra__", "_x"],
)
def test_a_key_that_names_a_part_of_the_merge_is_only_an_unknown_key(
    load, home: Path, key: str
) -> None:
    home_file(home, f"{key}: 1\n")
    assert error_of(load) == f'mm: ~/.config/mm/config.yaml: unknown key "{key}"'


def test_a_key_read_from_openais_variable_stays_a_secret_when_another_wins(
    load, home: Path
) -> None:
    """Every key a place gave is kept out of view, the ones that lost too."""
    home_file(home, "apiKey: mine\n")
    settings = load(environ={"OPENAI_API_KEY": SECRET})
    assert settings.api_key is not None and settings.api_key.get_secret_value() == "mine"
    assert SECRET in settings.secret_values()


def test_pydantic_settings_debugging_shows_no_api_key(
    load, home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The library logs what each source read when PYDANTIC_SETTINGS_DEBUG is set: each
    source hides the key from the moment it reads it."""
    monkeypatch.setenv("PYDANTIC_SETTINGS_DEBUG", "1")
    home_file(home, f"apiKey: {SECRET}1\nlsp: {{servers: []}}\n")  # merged by the library
    with caplog.at_level(logging.DEBUG, logger="pydantic_settings"):
        load(environ={"MM_API_KEY": SECRET + "2", "OPENAI_API_KEY": SECRET + "3"})
    assert "Resolving settings" in caplog.text and SECRET not in caplog.text


# --- folders -----------------------------------------------------------------------------------


def test_resolve_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_dir(".mm/sessions", tmp_path) == tmp_path / ".mm/sessions"
    assert resolve_dir("/var/mm", tmp_path) == Path("/var/mm")
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert resolve_dir("~/mm", Path("/elsewhere")) == tmp_path / "h/mm"


def test_the_sandbox_config_follows_the_settings_it_is_made_of() -> None:
    """Kept from call to call, and made again when a setting it is made of changes, in place
    or not (the settings are not frozen)."""
    settings = Settings(sandbox_write=["/srv"])
    first = settings.sandbox_config()
    assert settings.sandbox_config() is first
    assert (first.mode, first.write) == ("auto", ("/srv",))
    settings.sandbox_write.append("/opt")
    assert settings.sandbox_config().write == ("/srv", "/opt")
    settings.sandbox = "off"
    assert settings.sandbox_config().mode == "off"
    settings.sandbox_deny.append("/secret")
    settings.sandbox_network = False
    assert settings.sandbox_config().deny[-1] == "/secret"
    assert settings.sandbox_config().network is False
    copy = settings.model_copy(update={"sandbox": "strict"})
    assert (copy.sandbox_config().mode, settings.sandbox_config().mode) == ("strict", "off")
