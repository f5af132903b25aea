"""Secrets stay out of what the model runs: `env` through the real bash tool, a language server's
environment, the `commandEnvExclude` setting, and `mm -p` end to end."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from lsp_fixtures.support import FAKE_SERVER
from support.program import mm
from support.scripted_server import Reply, ScriptedServer, call
from support.trusting import trust_project_file

from mm_tui.config import LspServer, Settings, load_settings
from mm_tui.core.command_env import DEFAULT_EXCLUDE, command_env, excluded
from mm_tui.tools.args import BashArgs
from mm_tui.tools.base import ToolContext
from mm_tui.tools.bash import BashTool
from mm_tui.tools.lsp import LspArgs, LspTool

KEYS = {
    "MM_API_KEY": "mm-key-0123456789",
    "OPENAI_API_KEY": "sk-openai-0123456789",
    "GITHUB_TOKEN": "ghp_0123456789",
    "MY_SECRET": "hush-0123456789",
}


def names(env_output: str) -> set[str]:
    """The variable names `env` printed (a value may span lines: only NAME= lines count)."""
    return {line.split("=", 1)[0] for line in env_output.splitlines() if "=" in line}


async def bash_env(tmp_path: Path, settings: Settings) -> set[str]:
    result = await BashTool().run(BashArgs(command="env"), ToolContext(tmp_path, settings))
    assert result.status == "ok", result.output
    return names(result.output)


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**KEYS, "FOO": "bar", "lower_api_key": "low-0123456789"}.items():
        monkeypatch.setenv(name, value)


# --- the bash tool ------------------------------------------------------------------------------


@pytest.mark.usefixtures("keys")
async def test_env_in_bash_shows_no_key(tmp_path: Path) -> None:
    shown = await bash_env(tmp_path, Settings())
    assert not shown & set(KEYS), shown & set(KEYS)
    assert "lower_api_key" not in shown  # the patterns take no account of case
    assert {"FOO", "HOME", "PATH"} <= shown  # what is no secret is kept


@pytest.mark.usefixtures("keys")
async def test_an_empty_exclude_list_keeps_tokens_but_never_mm_s_own_keys(tmp_path: Path) -> None:
    shown = await bash_env(tmp_path, Settings(commandEnvExclude=[]))
    assert {"GITHUB_TOKEN", "MY_SECRET", "FOO"} <= shown
    assert not shown & {"MM_API_KEY", "OPENAI_API_KEY"}


@pytest.mark.usefixtures("keys")
async def test_the_exclude_list_is_the_person_s(tmp_path: Path) -> None:
    shown = await bash_env(tmp_path, Settings(commandEnvExclude=["f?o", "*_SECRET"]))
    assert "FOO" not in shown and "MY_SECRET" not in shown
    assert "GITHUB_TOKEN" in shown  # no longer in the list
    assert not shown & {"MM_API_KEY", "OPENAI_API_KEY"}


async def test_a_variable_holding_mm_s_key_is_left_out_whatever_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # names no pattern matches: only the value tells
    monkeypatch.setenv("GROQ", "gsk-the-configured-key")
    monkeypatch.setenv("OLLAMA", "ollama")
    shown = await bash_env(tmp_path, Settings(apiKey="gsk-the-configured-key"))
    assert "GROQ" not in shown
    assert "OLLAMA" in shown
    # a placeholder key is no secret: the variable holding it stays
    shown = await bash_env(tmp_path, Settings(apiKey="ollama"))
    assert "OLLAMA" in shown


# Secrets under other names than *_API_KEY, *_TOKEN, *_SECRET: each one a real program reads.
OTHER_SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI-0123456789",
    "SECRET_KEY": "django-0123456789",
    "STRIPE_SECRET_KEY": "sk_live_0123456789",
    "DB_PASSWORD": "hunter2-0123456789",
    "PGPASSWORD": "pg-0123456789",
    "MYSQL_PWD": "my-0123456789",
    "GITHUB_PAT": "github_pat_0123456789",
    "MY_PASS": "pass-0123456789",
    "SOME_CREDENTIALS": "cred-0123456789",
    "HF_TOKEN_PATH": "/somewhere/token",
    "API_KEYS": "a-0123456789,b-0123456789",
}
# What no command should lose: the shell's own, the locale, the terminal, the agent sockets.
KEPT = {
    "PATH",
    "HOME",
    "LANG",
    "TERM",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
    "TOKENIZERS_PARALLELISM",
    "KEYBOARD_LAYOUT",
    "AWS_ACCESS_KEY_ID",
    "MM_BASE_URL",
}


async def test_secrets_under_other_names_stay_out_of_a_bash_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in OTHER_SECRETS.items():
        monkeypatch.setenv(name, value)
    for name in KEPT - {"PATH", "HOME"}:
        monkeypatch.setenv(name, {"LANG": "C.UTF-8", "TERM": "xterm"}.get(name, "kept-value"))
    shown = await bash_env(tmp_path, Settings())
    assert not shown & set(OTHER_SECRETS), shown & set(OTHER_SECRETS)
    assert KEPT <= shown, KEPT - shown


def test_a_kept_environment_follows_changes_to_mm_s_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """The filtered environment is kept between calls: a variable set, changed or removed in
    mm's environment since, and other secrets or patterns, are seen at the next call, and what
    a caller does to its copy reaches nobody else."""
    monkeypatch.setenv("MM_KEPT_TEST", "one")
    first = command_env()
    assert first["MM_KEPT_TEST"] == "one"
    first["MM_KEPT_TEST"] = "changed by a caller"
    assert command_env()["MM_KEPT_TEST"] == "one"
    second = "two-0123456789"  # long enough to be taken for a key
    monkeypatch.setenv("MM_KEPT_TEST", second)
    assert command_env()["MM_KEPT_TEST"] == second
    assert "MM_KEPT_TEST" not in command_env(secrets=[second, None])
    assert "MM_KEPT_TEST" not in command_env(["MM_KEPT_*"])
    assert command_env()["MM_KEPT_TEST"] == second
    monkeypatch.delenv("MM_KEPT_TEST")
    assert "MM_KEPT_TEST" not in command_env()


def test_patterns_are_globs_without_case() -> None:
    assert excluded("MM_API_KEY", []) and excluded("openai_api_key", [])
    assert excluded("GITLAB_TOKEN") and excluded("aws_secret") and excluded("X_API_KEY")
    assert excluded("db_password") and excluded("Github_Pat") and excluded("token_file")
    assert not excluded("TOKENIZERS_PARALLELISM") and not excluded("KEYBOARD")
    assert not excluded("PATH") and not excluded("PWD") and not excluded("OLDPWD")
    assert not excluded("HOME") and not excluded("MM_BASE_URL") and not excluded("PASSAGE")
    env = command_env(["A*"], environ={"ABC": "1", "BCD": "2", "MM_API_KEY": "k"})
    assert env == {"BCD": "2"}


# --- the setting --------------------------------------------------------------------------------


def test_the_setting_from_files_and_the_environment(tmp_path: Path) -> None:
    def load(**kw):  # noqa: ANN003, ANN202
        return load_settings(cwd=tmp_path, home=tmp_path / "home", **kw)

    assert load(environ={}).command_env_exclude == list(DEFAULT_EXCLUDE)
    (tmp_path / ".mm").mkdir()
    (tmp_path / ".mm" / "config.yaml").write_text("commandEnvExclude: []\n")
    trust_project_file(tmp_path, tmp_path / "home")  # a key that needs the person's trust
    assert load(environ={}).command_env_exclude == []
    environ = {"MM_COMMAND_ENV_EXCLUDE": "*_TOKEN, AWS_*"}
    assert load(environ=environ).command_env_exclude == ["*_TOKEN", "AWS_*"]


# --- a language server --------------------------------------------------------------------------


@pytest.mark.usefixtures("keys")
async def test_a_language_server_gets_no_key(tmp_path: Path) -> None:
    """The fake server, started through `sh` so that the environment it got is written down."""
    seen = tmp_path / "server-env.txt"
    log = tmp_path / "log.jsonl"
    start = f'env > "{seen}"; exec "{sys.executable}" "{FAKE_SERVER}" --log "{log}"'
    server = LspServer(name="fake", command="sh", args=["-c", start], extensions=[".py"])
    settings = Settings(lsp={"servers": [server]}, commandEnvExclude=["*_TOKEN"])
    tool, warnings = LspTool.from_settings(settings, tmp_path)
    assert tool is not None, warnings
    (tmp_path / "a.py").write_text("x = 1\n")
    try:
        result = await tool.run(
            LspArgs(action="hover", path="a.py", symbol="x"), ToolContext(tmp_path, settings)
        )
        assert result.output == "fake hover"
    finally:
        await tool.aclose()
    shown = names(seen.read_text())
    assert not shown & {"MM_API_KEY", "OPENAI_API_KEY", "GITHUB_TOKEN"}
    assert {"MY_SECRET", "FOO"} <= shown  # the setting's list, not the default one


# --- end to end ---------------------------------------------------------------------------------


def test_mm_p_runs_env_without_the_keys(tmp_path: Path) -> None:
    """The real mm, its key in MM_API_KEY: the model has `env` run, and what goes back to it
    names no key variable (the values are redacted anyway: the names show the leak)."""
    with ScriptedServer() as server:
        server.script(Reply(tool_calls=[call("bash", {"command": "env"})]), Reply("done"))
        env = {**KEYS, "FOO": "bar", "MM_BASE_URL": server.base_url, "MM_MODEL": "m"}
        result = mm("-p", "show the environment", cwd=tmp_path, env=env)
        assert result.returncode == 0, result.stderr
        output = server.requests[1].messages[-1]["content"]
    shown = names(output)
    assert "FOO=bar" in output and "HOME" in shown
    assert not shown & set(KEYS), shown & set(KEYS)
    assert server.requests[0].headers.get("authorization") == f"Bearer {KEYS['MM_API_KEY']}"
