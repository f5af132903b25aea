"""bench_e2e replays mm's own request with a bare client: the request it takes from its relay
must be the person's, never the model probe's (mm's first use of a model sends the probe's
requests first, marked with its header)."""

from __future__ import annotations

import importlib.util
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _bench_e2e():  # noqa: ANN202 - the module, loaded from its file as the benches are run
    spec = importlib.util.spec_from_file_location("bench_e2e", ROOT / "bench" / "bench_e2e.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    path = list(sys.path)
    try:  # it puts bench/, tests/e2e/ and tests/ first on the path: not for the tests after
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = path
    return module


def _exchange(folder: Path, n: int, headers: str, body: bytes, text: str) -> None:
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n{headers}"
    (folder / f"{n}.up").write_bytes(head.encode() + b"\r\n" + body)
    event = b'data: {"choices": [{"delta": {"content": "%s"}}]}\r\n\r\n' % text.encode()
    (folder / f"{n}.down").write_bytes(struct.pack("<dI", 1.0, len(event)) + event)


def test_the_probes_requests_are_not_taken_for_mms_own(tmp_path: Path) -> None:
    bench = _bench_e2e()
    _exchange(tmp_path, 0, "X-MM-Probe: tools\r\n", b'{"probe": 1}', "probe")
    _exchange(tmp_path, 1, "x-mm-probe: chat\r\n", b'{"probe": 2}', "probe")
    _exchange(tmp_path, 2, "Content-Type: application/json\r\n", b'{"person": 1}', "hello")
    relay = object.__new__(bench.Relay)  # its files only: no relay process
    relay.dir, relay.seen = tmp_path, 0
    assert relay.completions() == [(b'{"person": 1}', [(1.0, "hello")])]
