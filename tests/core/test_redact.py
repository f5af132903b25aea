"""Redaction of the api key: which values count, how they are replaced, the session's guard."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.engine import make_engine
from support.scripted_model import ScriptedModel
from support.session_helpers import saved as saved_session

from mm_tui.config import Settings, load_settings
from mm_tui.core.redact import MARK, MIN_LENGTH, Redactor
from mm_tui.engine.journal import flush_all
from mm_tui.engine.session import Session


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_the_environment_and_the_given_keys_are_known(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MM_API_KEY", "sk-env-12345678")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-12345678")
    redactor = Redactor(Settings(apiKey="sk-settings-12345678").secret_values())
    text = "a sk-env-12345678 b sk-openai-12345678 c sk-settings-12345678 d"
    assert redactor.text(text) == f"a {MARK} b {MARK} c {MARK} d"
    # nothing is remembered across redactors: one without the key does not know it
    assert Redactor(environ={}).text("sk-settings-12345678") == "sk-settings-12345678"


def test_keys_shorter_than_the_minimum_are_left_alone() -> None:
    assert MIN_LENGTH == 8
    redactor = Redactor(environ={"MM_API_KEY": "ollama"})
    assert redactor.text("start ollama serve") == "start ollama serve"
    assert Redactor(["x" * MIN_LENGTH], environ={}).text("x" * MIN_LENGTH) == MARK
    assert Redactor([None, ""], environ={}).secrets == ()


def test_a_key_that_holds_another_is_replaced_whole() -> None:
    redactor = Redactor(
        environ={"MM_API_KEY": "sk-abcdefgh", "OPENAI_API_KEY": "sk-abcdefgh-longer"}
    )
    assert redactor.secrets == ("sk-abcdefgh-longer", "sk-abcdefgh")
    assert redactor.text("[sk-abcdefgh-longer]") == f"[{MARK}]"


def test_load_settings_keeps_every_key_it_reads(tmp_path: Path) -> None:
    (tmp_path / ".mm").mkdir()
    (tmp_path / ".mm" / "config.yaml").write_text("apiKey: from-the-project-file\n")
    settings = load_settings(cwd=tmp_path, home=tmp_path, environ={"MM_API_KEY": "from-the-env"})
    assert settings.api_key is not None and settings.api_key.get_secret_value() == "from-the-env"
    # The project file's key lost to the environment's, and is still a secret.
    assert set(settings.secret_values()) == {"from-the-project-file", "from-the-env"}
    redactor = Redactor(settings.secret_values(), environ={})
    assert redactor.text("from-the-project-file") == MARK
    # a copy of the settings (a resumed session's model) keeps them
    assert set(settings.model_copy(update={"model": "m"}).secret_values()) == set(
        settings.secret_values()
    )


def test_the_engine_gives_its_secrets_to_its_sessions(tmp_path: Path) -> None:
    settings = Settings(apiKey="sk-configured-0123456789")
    engine = make_engine(tmp_path, ScriptedModel(), settings=settings, sessions=tmp_path)
    session = engine.session
    assert session.redactor is engine.redactor
    session.set_messages([{"role": "user", "content": "sk-configured-0123456789"}])
    assert saved_session(session)["messages"][-1]["content"] == MARK
    assert b"sk-configured" not in session.path.read_bytes()
    other = Session.new(tmp_path, cwd=str(tmp_path), model="m", provider="p", base_url="u")
    engine.new_session(other)
    assert other.redactor is engine.redactor


def test_redact_data_copies_only_what_changes() -> None:
    redactor = Redactor(environ={"MM_API_KEY": "sk-0123456789"})
    clean = {"role": "tool", "content": "nothing here"}
    data = {"messages": [clean, {"role": "user", "content": "key sk-0123456789"}], "n": 3}
    out = redactor.data(data)
    assert out == {"messages": [clean, {"role": "user", "content": f"key {MARK}"}], "n": 3}
    assert out["messages"][0] is clean
    assert data["messages"][1]["content"] == "key sk-0123456789"  # the original is untouched
    assert redactor.data({"a": [clean]})["a"][0] is clean


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
