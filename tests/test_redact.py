"""Redaction of the api key: which values count, how they are replaced, the session's guard."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr
from session_helpers import saved as saved_session

from mm_tui.config import Settings, load_settings
from mm_tui.engine import redact as redact_module
from mm_tui.engine.journal import flush_all
from mm_tui.engine.redact import MARK, MIN_LENGTH, redact, redact_data, remember, secrets
from mm_tui.engine.session import Session


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redact_module, "_remembered", set())
    for name in ("MM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_the_environment_and_the_settings_are_known(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MM_API_KEY", "sk-env-12345678")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-12345678")
    settings = Settings(apiKey="sk-settings-12345678")
    text = "a sk-env-12345678 b sk-openai-12345678 c sk-settings-12345678 d"
    assert redact(text, settings) == f"a {MARK} b {MARK} c {MARK} d"
    # The settings' key is remembered: saving a session later hides it without the settings.
    monkeypatch.delenv("MM_API_KEY")
    assert redact("sk-settings-12345678") == MARK


def test_keys_shorter_than_the_minimum_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MM_API_KEY", "ollama")
    assert MIN_LENGTH == 8
    assert redact("start ollama serve") == "start ollama serve"
    monkeypatch.setenv("MM_API_KEY", "x" * MIN_LENGTH)
    assert redact("x" * MIN_LENGTH) == MARK


def test_a_key_that_holds_another_is_replaced_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MM_API_KEY", "sk-abcdefgh")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abcdefgh-longer")
    assert secrets() == ("sk-abcdefgh-longer", "sk-abcdefgh")
    assert redact("[sk-abcdefgh-longer]") == f"[{MARK}]"


def test_remember_takes_secret_strings_and_settings() -> None:
    remember(SecretStr("secret-one-123"))
    remember("secret-two-456")
    remember(Settings(apiKey="secret-three-789"))
    remember(None)
    remember(Settings())
    assert set(secrets()) == {"secret-one-123", "secret-two-456", "secret-three-789"}


def test_load_settings_remembers_every_key_it_reads(tmp_path: Path) -> None:
    (tmp_path / ".mm").mkdir()
    (tmp_path / ".mm" / "config.yaml").write_text("apiKey: from-the-project-file\n")
    settings = load_settings(cwd=tmp_path, home=tmp_path, environ={"MM_API_KEY": "from-the-env"})
    assert settings.api_key is not None and settings.api_key.get_secret_value() == "from-the-env"
    # The project file's key lost to the environment's, and is still a secret.
    assert set(secrets(environ={})) == {"from-the-project-file", "from-the-env"}


def test_redact_data_copies_only_what_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MM_API_KEY", "sk-0123456789")
    clean = {"role": "tool", "content": "nothing here"}
    data = {"messages": [clean, {"role": "user", "content": "key sk-0123456789"}], "n": 3}
    out = redact_data(data)
    assert out == {"messages": [clean, {"role": "user", "content": f"key {MARK}"}], "n": 3}
    assert out["messages"][0] is clean
    assert data["messages"][1]["content"] == "key sk-0123456789"  # the original is untouched
    assert redact_data({"a": [clean]})["a"][0] is clean


def test_a_session_file_never_holds_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A key the person pasted into a prompt goes to the model (they sent it), not to disk."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-pasted-0123456789")
    session = Session.new(tmp_path, cwd=str(tmp_path), model="m", provider="p", base_url="u")
    session.set_messages([{"role": "user", "content": "my key is sk-pasted-0123456789"}])
    assert session.messages[0]["content"] == "my key is sk-pasted-0123456789"
    saved = saved_session(session)
    assert saved["messages"][0]["content"] == f"my key is {MARK}"
    assert b"sk-pasted" not in session.path.read_bytes()


@pytest.mark.parametrize("lone_surrogate", [False, True])
def test_a_key_that_json_escapes_is_found_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lone_surrogate: bool
) -> None:
    key = 'sk-"ключ"-0123456789'
    monkeypatch.setenv("MM_API_KEY", key)
    session = Session.new(tmp_path, cwd=str(tmp_path), model="m", provider="p", base_url="u")
    # A lone surrogate makes the file use \u escapes for every character beyond ASCII.
    extra = "\ud800" if lone_surrogate else ""
    session.set_messages([{"role": "user", "content": f"key: {key}{extra}"}])
    flush_all()
    raw = session.path.read_bytes()
    assert (b"\\ud800" in raw) is lone_surrogate  # the file took the escaping way
    assert "ключ".encode() not in raw and b"\\u043a" not in raw
    assert saved_session(session)["messages"][0]["content"] == f"key: {MARK}{extra}"
