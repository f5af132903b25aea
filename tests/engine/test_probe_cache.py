"""The probe's kept answers (engine/probe_cache.py): written whole and private, reused with no
probe request while the server lists the model unchanged, probed again when it does not, and a
broken or hostile file read as "probe again", never as an error nor as findings."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from support.scripted_server import ProbeBehaviour, ScriptedServer

from mm_tui.engine.ask_style import probed
from mm_tui.engine.probe_cache import (
    PROBE_VERSION,
    cache_path,
    fingerprint_of,
    load_findings,
    save_findings,
)
from mm_tui.engine.probe_findings import ProbeFindings
from mm_tui.engine.provider import OpenAIProvider

MODEL = "scripted-model"


def models_route(created: int, *ids: str) -> dict[tuple[str, str], object]:
    listed = ids or (MODEL,)
    data = [{"id": i, "object": "model", "created": created, "owned_by": "me"} for i in listed]
    return {("GET", "/v1/models"): {"object": "list", "data": data}}


def client(server: ScriptedServer) -> OpenAIProvider:
    return OpenAIProvider(server.base_url, MODEL, retries=0)


async def test_a_finished_probe_is_kept_privately_and_reused_without_a_probe_request(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    with ScriptedServer(routes=models_route(5), probe=ProbeBehaviour.llama_cpp_python()) as server:
        first, kept = await probed(client(server), state_dir=state)
        assert not kept and first.streamed_calls == "no"
        asked = len(server.probe_requests)
        assert asked == 3
        path = cache_path(state, server.base_url, MODEL)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary left
        again, kept = await probed(client(server), state_dir=state)
        assert kept and again == first
        assert len(server.probe_requests) == asked  # nothing asked but the fingerprint
        assert len(server.probe_lookups) == 2
        assert server.requests == [] and server.lookups == []


async def test_a_changed_fingerprint_or_an_unlisted_model_is_probed_again(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with ScriptedServer(routes=models_route(5)) as server:
        await probed(client(server), state_dir=state)
        server.routes.update(models_route(6))  # the model file was replaced
        _, kept = await probed(client(server), state_dir=state)
        assert not kept and len(server.probe_requests) == 4
        _, kept = await probed(client(server), state_dir=state)
        assert kept and len(server.probe_requests) == 4
        server.routes.update(models_route(6, "another-model"))  # no longer listed
        _, kept = await probed(client(server), state_dir=state)
        assert not kept and len(server.probe_requests) == 6


async def test_fresh_probes_whatever_is_kept(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        await probed(client(server), state_dir=tmp_path)
        _, kept = await probed(client(server), state_dir=tmp_path, fresh=True)
    assert not kept and len(server.probe_requests) == 4


@pytest.mark.parametrize(
    "behaviour",
    [ProbeBehaviour(silent=True), ProbeBehaviour(chat=False)],
    ids=["timed out", "chat refused"],
)
async def test_a_probe_that_did_not_finish_is_not_kept(
    tmp_path: Path, behaviour: ProbeBehaviour
) -> None:
    with ScriptedServer(probe=behaviour) as server:
        found, _ = await probed(client(server), state_dir=tmp_path, bound=1.0)
        assert not cache_path(tmp_path, server.base_url, MODEL).exists()
    assert found.status == "timed out" or found.chat == "no"


def kept_record(**changes: object) -> dict[str, object]:
    record: dict[str, object] = {
        "version": PROBE_VERSION,
        "base_url": "http://127.0.0.1:1/v1",
        "model": MODEL,
        "fingerprint": {"id": MODEL, "created": 5},
        "findings": ProbeFindings(chat="yes", tools="no", text_calls="yes").to_json(),
    }
    record.update(changes)
    return record


def findings_with(**changes: object) -> dict[str, object]:
    return {**ProbeFindings(chat="yes").to_json(), **changes}


HOSTILE = {
    "not JSON": b"\x00\xff{{",
    "a list": b"[1, 2]",
    "deep": b"[" * 100_000,
    "too big": b'{"pad": "' + b"x" * 70_000 + b'"}',
    "another version": kept_record(version=PROBE_VERSION + 1),
    "a version as text": kept_record(version=str(PROBE_VERSION)),
    "another server": kept_record(base_url="http://evil.example/v1"),
    "another model": kept_record(model="other"),
    "a field missing": kept_record(findings={"tools": "no"}),
    "a field more": kept_record(extra=1),
    "a finding out of its set": kept_record(findings=findings_with(tools="maybe")),
    "an escape in a reason": kept_record(findings=findings_with(reason="\x1b[2Jgone")),
    "a window as text": kept_record(findings=findings_with(window="4096")),
    "a window of a bool": kept_record(findings=findings_with(window=True)),
    "a speed that is not a number": kept_record(findings=findings_with(tokens_per_second="NaN")),
    "an infinite speed": kept_record(findings=findings_with(tokens_per_second=float("inf"))),
    "a status not done": kept_record(findings=findings_with(status="timed out")),
    "a nested fingerprint": kept_record(fingerprint={"id": MODEL, "created": [5]}),
}


@pytest.mark.parametrize("content", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_broken_or_hostile_file_means_probe_again(tmp_path: Path, content: object) -> None:
    base_url = "http://127.0.0.1:1/v1"
    path = cache_path(tmp_path, base_url, MODEL)
    path.parent.mkdir(parents=True)
    data = content if isinstance(content, bytes) else json.dumps(content).encode()
    path.write_bytes(data)
    assert load_findings(tmp_path, base_url, MODEL, {"id": MODEL, "created": 5}) is None


def test_a_sound_file_is_read_back(tmp_path: Path) -> None:
    """The hostile files above are refused for what they change, not for being files."""
    base_url = "http://127.0.0.1:1/v1"
    path = cache_path(tmp_path, base_url, MODEL)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(kept_record()))
    found = load_findings(tmp_path, base_url, MODEL, {"id": MODEL, "created": 5})
    assert found is not None and found.asking == "text calls"
    assert load_findings(tmp_path, base_url, MODEL, {"id": MODEL, "created": 6}) is None
    assert load_findings(tmp_path, base_url, MODEL, None) is None


async def test_a_broken_file_is_probed_over(tmp_path: Path) -> None:
    with ScriptedServer() as server:
        path = cache_path(tmp_path, server.base_url, MODEL)
        path.parent.mkdir(parents=True)
        path.write_bytes(b"garbage")
        found, kept = await probed(client(server), state_dir=tmp_path)
        assert not kept and found.status == "done"
        assert json.loads(path.read_text())["findings"]["status"] == "done"


def test_a_state_folder_that_cannot_be_written_keeps_nothing(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    found = ProbeFindings(chat="yes")
    assert not save_findings(blocked, "http://h/v1", MODEL, {"id": MODEL}, found)


def test_the_fingerprint_is_the_models_entry() -> None:
    models = {
        "data": [
            {"id": "a", "created": 1, "owned_by": "x", "permission": [{}]},
            {"id": MODEL, "created": 2, "owned_by": "library", "digest": "sha256:ab"},
        ]
    }
    assert fingerprint_of(models, MODEL) == {
        "id": MODEL,
        "created": 2,
        "owned_by": "library",
        "digest": "sha256:ab",
    }
    assert fingerprint_of(models, "missing") is None
    assert fingerprint_of({"error": "no"}, MODEL) is None
