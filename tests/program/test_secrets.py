"""Keys stay out of what mm keeps at rest and prints: a session's metadata file (its title, its
base URL), the errors a server answers with that echo the key (line mode, `mm -p`, the window,
the journal), and the errors of start-up, before any engine exists. Each test is the attack: a
key pasted into a prompt, a key in the base URL, a server that repeats the Authorization header
it was sent."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import acp
import pytest
from support.program import mm
from support.scripted_server import Error, Received, Reply, ScriptedServer
from support.session_helpers import journal_files, sessions_of
from support.terminal import mm_in_tmux, tmux, until_screen
from support.waiting import until
from support.window_helpers import all_text, started_app

from mm_tui.config import Settings
from mm_tui.core.redact import MARK, Redactor, clean_url, url_secrets
from mm_tui.engine.journal import flush_all
from mm_tui.engine.session import Session
from mm_tui.engine.session_listing import list_sessions

KEY = "sk-test-0123456789abcdef"
URL_PASSWORD = "pw-in-the-url-0123456789"


def forms(secret: str) -> list[bytes]:
    """The ways a secret can sit in a file: as it is, and as JSON escapes it."""
    return [
        secret.encode(),
        json.dumps(secret)[1:-1].encode(),
        json.dumps(secret, ensure_ascii=False)[1:-1].encode(),
    ]


def assert_nowhere(files: list[Path], *secrets: str) -> None:
    assert files, "no file to look at"
    for path in files:
        data = path.read_bytes()
        for secret in secrets:
            for form in forms(secret):
                assert form not in data, f"{path.name} holds {form!r}"
            assert secret[:10].encode() not in data, f"{path.name} holds the start of a key"


def session_files(folder: Path) -> list[Path]:
    flush_all()
    return sorted(p for p in folder.iterdir() if p.is_file())


# --- the URL ------------------------------------------------------------------------------------


def test_a_url_s_credentials_are_found_and_removed() -> None:
    assert clean_url(f"https://me:{URL_PASSWORD}@host.example:8443/v1") == (
        "https://host.example:8443/v1"
    )
    basic = base64.b64encode(f"me:{URL_PASSWORD}".encode()).decode()  # sent as Basic auth
    assert url_secrets(f"https://me:{URL_PASSWORD}@host.example/v1") == (URL_PASSWORD, basic)
    # a user name alone is how some servers take a token
    assert url_secrets(f"https://{KEY}@host/v1")[0] == KEY
    assert clean_url(f"https://{KEY}@host/v1") == "https://host/v1"
    url = f"http://127.0.0.1:8000/v1?api_key={KEY}&model=x&Access-Token=abc%2Bdef#part"
    assert clean_url(url) == (
        f"http://127.0.0.1:8000/v1?api_key={MARK}&model=x&Access-Token={MARK}#part"
    )
    assert set(url_secrets(url)) == {KEY, "abc%2Bdef", "abc+def"}
    # what carries nothing comes back as it was
    for plain in ("http://localhost:11434/v1", "localhost:11434/v1", "http://h/v1?model=x", None):
        assert clean_url(plain) == plain and url_secrets(plain) == ()
    # without a scheme (refused as a base URL, in words that quote it)
    assert clean_url(f"me:{URL_PASSWORD}@localhost:8000/v1") == "localhost:8000/v1"


def test_the_settings_count_the_url_s_credentials_as_secrets() -> None:
    settings = Settings(baseUrl=f"https://me:{URL_PASSWORD}@host/v1?token={KEY}")
    redactor = Redactor(settings.secret_values(), environ={})
    assert redactor.text(f"{URL_PASSWORD} {KEY}") == f"{MARK} {MARK}"


# --- the metadata file --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "base_url",
    [
        f"http://me:{URL_PASSWORD}@127.0.0.1:9/v1",
        f"http://127.0.0.1:9/v1?api_key={URL_PASSWORD}",
    ],
)
def test_a_session_s_files_hold_no_credential_of_its_base_url(
    tmp_path: Path, base_url: str
) -> None:
    session = Session.new(tmp_path, cwd=str(tmp_path), model="m", provider="p", base_url=base_url)
    session.redactor = Redactor(Settings(baseUrl=base_url).secret_values(), environ={})
    session.set_messages([{"role": "user", "content": "hello"}])
    assert_nowhere(session_files(tmp_path), URL_PASSWORD)
    meta = json.loads(session.meta_path.read_text())
    assert meta["base_url"].startswith("http://127.0.0.1:9/v1")
    assert Session.load(tmp_path, session.id).base_url == meta["base_url"]


def test_mm_p_with_a_key_in_the_prompt_and_the_url_leaves_none_at_rest(tmp_path: Path) -> None:
    """The real mm: the first prompt holds the key across the title's 80th character (a title
    shortened before it is redacted keeps the start of the key), the base URL a password."""
    prompt = "x" * 60 + f" key {KEY}, and the server's password {URL_PASSWORD}"
    folder = sessions_of(tmp_path)
    with ScriptedServer(Reply("done"), Reply("again")) as server:
        plain = server.base_url
        base_url = plain.replace("http://", f"http://me:{URL_PASSWORD}@")
        env = {"MM_API_KEY": KEY, "MM_BASE_URL": base_url, "MM_MODEL": "m"}
        result = mm("-p", prompt, cwd=tmp_path, env=env)
        assert result.returncode == 0, result.stderr
        assert server.requests[0].messages[-1]["content"] == prompt  # the model got it
        assert_nowhere(session_files(folder), KEY, URL_PASSWORD)
        # --resume still finds the session, and goes on with it
        result = mm("-p", "go on", "--resume", cwd=tmp_path, env=env)
        assert result.returncode == 0, result.stderr
        assert "again" in result.stdout
    assert_nowhere(session_files(folder), KEY, URL_PASSWORD)
    assert len(journal_files(folder)) == 1
    (info,) = list_sessions(folder)
    assert info.title.startswith("x" * 60 + f" key {MARK}")
    assert info.message_count >= 4
    meta = json.loads(next(folder.glob("*.meta.json")).read_text())
    assert meta["base_url"] == plain


# --- errors that echo the key -------------------------------------------------------------------


def echo_authorization(request: Received) -> Error:
    """A server that repeats the header it was sent, as some proxies and gateways do."""
    said = request.headers.get("authorization", "")
    return Error(401, f"Incorrect API key provided: {said}")


def test_mm_p_prints_a_401_that_echoes_the_key_redacted(tmp_path: Path) -> None:
    with ScriptedServer(on_empty=echo_authorization) as server:
        env = {"MM_API_KEY": KEY, "MM_BASE_URL": server.base_url, "MM_MODEL": "m"}
        result = mm("-p", "hello", cwd=tmp_path, env=env, text=False)
    out = result.stdout + result.stderr
    assert result.returncode == 1
    assert b"answered 401" in out and MARK.encode() in out, out
    for form in forms(KEY):
        assert form not in out
    assert_nowhere(session_files(sessions_of(tmp_path)), KEY)


def test_a_start_up_error_that_echoes_the_key_is_redacted(tmp_path: Path) -> None:
    """No model configured: mm lists the server's models before any engine exists, and the
    server's refusal quotes the key."""
    answer = Error(401, f"Incorrect API key provided: Bearer {KEY}")
    with ScriptedServer(routes={("GET", "/v1/models"): answer}) as server:
        base_url = server.base_url.replace("http://", f"http://me:{URL_PASSWORD}@")
        env = {"MM_API_KEY": KEY, "MM_BASE_URL": base_url}
        result = mm("-p", "hello", cwd=tmp_path, env=env, text=False)
    out = result.stdout + result.stderr
    assert result.returncode == 2, out
    assert b"answered 401" in out and MARK.encode() in out, out
    for secret in (KEY, URL_PASSWORD):
        assert secret.encode() not in out


async def test_the_window_shows_a_401_that_echoes_the_key_redacted(tmp_path: Path) -> None:
    def notices() -> str:
        return "\n".join(i.text for i in app.main.transcript.items if hasattr(i, "text"))

    with ScriptedServer(on_empty=echo_authorization) as server:
        app = started_app(server.base_url, tmp_path, apiKey=KEY)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(lambda: app.engine is not None, "the start-up", 30, pilot=pilot)
            app.main.submit("hello")
            await until(lambda: "answered 401" in notices(), "the error notice", 30, pilot=pilot)
            engine = app.engine
            assert engine is not None
            await until(lambda: not engine.busy, "the turn's end", 30, pilot=pilot)
            await pilot.pause()
            assert MARK in notices() and KEY not in notices(), notices()
            assert KEY not in all_text(app) and KEY not in str(app.main.status.text)
    assert_nowhere(session_files(tmp_path / ".mm" / "sessions"), KEY)  # started_app sets it


async def test_the_window_closes_on_a_start_up_error_with_the_key_redacted(tmp_path: Path) -> None:
    """No model configured: the window's boot lists the models, and the refusal quotes the
    key; the line the window closes with is redacted."""
    from mm_tui.startup import start
    from mm_tui.window.app import MMApp

    answer = Error(401, f"Incorrect API key provided: Bearer {KEY}")
    with ScriptedServer(routes={("GET", "/v1/models"): answer}) as server:

        async def boot():  # noqa: ANN202 - as cli.window_boot's
            settings = Settings(baseUrl=server.base_url, apiKey=KEY, sessionsDir=str(tmp_path))
            return await start(settings, tmp_path)

        app = MMApp(boot, clock=lambda: 100.0)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(lambda: bool(app.exit_message), "the start-up error", 30, pilot=pilot)
    said = str(app.exit_message)
    assert "answered 401" in said and MARK in said and KEY not in said, said


def test_line_mode_prints_a_401_that_echoes_the_key_redacted(tmp_path: Path) -> None:
    with ScriptedServer(on_empty=echo_authorization) as server:
        env = {"MM_API_KEY": KEY, "MM_BASE_URL": server.base_url, "MM_MODEL": "m"}
        with mm_in_tmux(tmp_path, "secrets-401", "--line", env=env) as session:
            tmux("send-keys", "-t", session, "hello", "Enter")
            screen = until_screen(
                session,
                lambda s: "answered 401" in s and s.rstrip().endswith("›"),
                "the error and the next prompt",
                scrollback=True,
            )
    joined = "".join(screen.splitlines())  # a long line wraps at the 100th column
    assert MARK in joined and KEY not in joined and KEY[:10] not in joined, screen


async def test_mm_acp_answers_and_logs_a_401_that_echoes_the_key_redacted(tmp_path: Path) -> None:
    """The editor's text and the agent's log (what an asking mm keeps of an asked agent), the
    base URL carrying a password (the log names the model's server)."""
    from support.acp_helpers import Recorder, ask, mm_acp, start

    (tmp_path / "key.yaml").write_text(f"apiKey: {KEY}\n")
    client = Recorder()
    with ScriptedServer(on_empty=echo_authorization) as server:
        url = server.base_url.replace("http://", f"http://me:{URL_PASSWORD}@")
        args = ("--config", "key.yaml", "--base-url", url)
        async with mm_acp(tmp_path, server, client, *args) as (conn, log):
            session_id = await start(conn, tmp_path)
            with pytest.raises(acp.RequestError) as failed:  # a failed turn answers with an error
                await ask(conn, session_id, "hello")
    said = client.text()
    assert "answered 401" in said and MARK in said and KEY not in said, said
    error = json.dumps(failed.value.to_error_obj())
    assert "answered 401" in error and MARK in error, error
    assert KEY not in error and URL_PASSWORD not in error, error
    logged = log.read_text()
    assert "answered 401" in logged and "127.0.0.1" in logged, logged
    assert KEY not in logged and URL_PASSWORD not in logged, logged
