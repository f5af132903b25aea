import sys
from pathlib import Path

import pytest

# Test helpers (the scripted server, the scripted model) are imported by name.
sys.path.insert(0, str(Path(__file__).parent))


def _snapshots_dirname(cls, *, test_location) -> str:  # noqa: ANN001
    """Window pictures live in tests/snapshots/, as the design says, one SVG per test."""
    return str(Path(__file__).parent / "snapshots")


try:
    import pytest_textual_snapshot
except ImportError:  # pragma: no cover - the test extras always have it
    pass
else:
    pytest_textual_snapshot.SVGImageExtension.dirname = classmethod(_snapshots_dirname)


@pytest.fixture(autouse=True)
def _direct(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every server of the tests is on 127.0.0.1: a proxy configured on the machine must not
    be used."""
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
