"""The probe's answers kept per server and model, so that a model is probed once, not at
every start: a JSON file per server and model in `<state folder>/probes/` (the name a hash of
the two), written whole to a temporary file and renamed over the old one, readable by the
person alone (0600, in a 0700 folder).

The rule: a kept answer is used while the server still lists the model (`GET /models`) with
the same fingerprint (the fields of its entry that change when the model file does: `created`
(Ollama's is the model's modification time), `owned_by`, and `digest`, `modified_at`,
`max_model_len` where a server gives them), the file names the same
server and model, and its format is this probe's (`PROBE_VERSION`). A server that does not list
the model, or lists it changed, is probed again. Only a probe that ran to its end, and got an
answer to plain chat, is kept (a model that failed to load is probed at the next start).

What is read back is untrusted (anyone who can write the state folder may have written it):
every field is checked, and anything else — a broken file, a missing field, a value out of its
set, a file too big — reads as "probe again", never as an error."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from mm_tui.core.files import write_atomically
from mm_tui.engine.probe_findings import PROBE_HEADER, ProbeFindings

PROBE_VERSION = 1
MAX_FILE = 64 * 1024  # bytes: a kept answer is well under 2 KiB
FINGERPRINT_FIELDS = ("id", "created", "owned_by", "digest", "modified_at", "max_model_len")

Fingerprint = dict[str, str | int | float | bool | None]


def cache_path(state_dir: Path, base_url: str, model: str) -> Path:
    key = hashlib.sha256(f"{base_url.rstrip('/')}\n{model}".encode()).hexdigest()[:32]
    return state_dir / "probes" / f"{key}.json"


def fingerprint_of(models: Any, model: str) -> Fingerprint | None:
    """The fingerprint of `model` in a `GET /models` answer, or None when it is not listed."""
    data = models.get("data") if isinstance(models, dict) else None
    if not isinstance(data, list):
        return None
    for entry in data:
        if isinstance(entry, dict) and entry.get("id") == model:
            return {
                name: entry[name]
                for name in FINGERPRINT_FIELDS
                if name in entry and _scalar(entry[name])
            }
    return None


async def read_fingerprint(
    base_url: str, model: str, *, api_key: str | None = None, timeout: float = 3.0
) -> Fingerprint | None:
    """Ask the server for the model's fingerprint (None: not listed, or no answer)."""
    from mm_tui.engine.servers import JsonAsker, is_loopback

    base = base_url.rstrip("/")
    headers = {PROBE_HEADER: "fingerprint"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    async with JsonAsker(timeout, headers, trust_env=not is_loopback(base)) as asker:
        return fingerprint_of(await asker.json(base + "/models"), model)


def load_findings(
    state_dir: Path, base_url: str, model: str, fingerprint: Fingerprint | None
) -> ProbeFindings | None:
    """The kept answer for this server and model when the rule above holds, else None."""
    if fingerprint is None:
        return None
    path = cache_path(state_dir, base_url, model)
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_FILE + 1)
        data = json.loads(raw) if len(raw) <= MAX_FILE else None
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or set(data) != {
        "version",
        "base_url",
        "model",
        "fingerprint",
        "findings",
    }:
        return None
    if data["version"] != PROBE_VERSION or type(data["version"]) is not int:
        return None
    if data["base_url"] != base_url.rstrip("/") or data["model"] != model:
        return None
    if not _same_fingerprint(data["fingerprint"], fingerprint):
        return None
    findings = ProbeFindings.from_json(data["findings"])
    return findings if findings is not None and findings.status == "done" else None


def save_findings(
    state_dir: Path,
    base_url: str,
    model: str,
    fingerprint: Fingerprint | None,
    findings: ProbeFindings,
) -> bool:
    """Keep a finished probe's answer (whole, or not at all); whether it was kept. A probe that
    did not finish, or a model the server does not list, is not kept: it is probed again."""
    if fingerprint is None or findings.status != "done" or findings.chat != "yes":
        return False
    path = cache_path(state_dir, base_url, model)
    record = {
        "version": PROBE_VERSION,
        "base_url": base_url.rstrip("/"),
        "model": model,
        "fingerprint": fingerprint,
        "findings": findings.to_json(),
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = json.dumps(record, ensure_ascii=False).encode()
        # owner-only; a lost write only means probing again, so no fsync
        write_atomically(path, data, mode=0o600, sync=False)
    except OSError:
        return False
    return True


def _scalar(value: Any) -> bool:
    return value is None or (isinstance(value, str | int | float | bool) and len(str(value)) < 200)


def _same_fingerprint(kept: Any, now: Fingerprint) -> bool:
    if not isinstance(kept, dict) or not all(_scalar(value) for value in kept.values()):
        return False
    return kept == now
