import sys
from pathlib import Path

import pytest
from hypothesis import settings

# Hypothesis's default deadline (200 ms per example) is a timed assertion: on a busy two-core CI
# machine an example that takes 2 ms once takes 300 ms, and the test fails for no fault. Speed is
# measured by the benchmarks; here every property test runs without a deadline.
settings.register_profile("mm", deadline=None)
settings.load_profile("mm")

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
