import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# Hypothesis's default deadline (200 ms per example) is a timed assertion: on a busy two-core CI
# machine an example that takes 2 ms once takes 300 ms, and the test fails for no fault. Speed is
# measured by the benchmarks; here every property test runs without a deadline.
settings.register_profile("mm", deadline=None)
settings.load_profile("mm")

# The test helpers are the support package (tests/support/), imported as `support.<name>` by the
# tests of every folder under tests/ (this file is the conftest of them all).
sys.path.insert(0, str(Path(__file__).parent))

from support import folders, processes, temp_folder  # noqa: E402

# `mm -p` reads what is piped to it: a test's child that inherits the tests' own stdin must not
# wait on a pipe whoever started the tests left open (a CI runner's). A terminal stays: mm never
# reads one unasked, and a person debugging with pdb needs it.
if not os.isatty(0):
    _null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(_null, 0)
    os.close(_null)
from support.env import isolate  # noqa: E402
from support.waiting import wait_until  # noqa: E402


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
def _answers_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pilot presses a/s/r/n the moment a permission box opens, which a person's typing does
    not: the window takes them as answers at once in the tests (window/widgets/permission.py's guard
    against typing into the box is tested on its own, with its own clock)."""
    from mm_tui.window.widgets import permission

    monkeypatch.setattr(permission, "ARMED_AFTER", 0.0)


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


@pytest.fixture(autouse=True, scope="session")
def _no_user_instructions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The developer's ~/.config/mm/AGENTS.md must not enter the prompts and start-up notes of
    the engines the tests start in this process: the person's configuration folder is an empty
    one (tests that start `mm` give it its own, in the home of support/env.py). mm's state
    folder too: the sessions of the engines started here go there, never to the developer's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config-home")))
        patch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state-home")))
        yield


@pytest.fixture(autouse=True, scope="session")
def _own_temp_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """What the tests and the programs they start put in the temp folder goes in one of the
    run's own (support/temp_folder.py), never in the machine's: `mm --demo` keeps its playground
    there three days, for a person. On CI (`CI` set: a machine of the run's own) the run fails if
    one is left in the machine's all the same, naming it; elsewhere a person's own `mm --demo`
    may make one meanwhile, so it is only said."""
    machines = temp_folder.MACHINES
    before = temp_folder.playgrounds(machines)
    with temp_folder.in_place_of_the_machines(tmp_path_factory.mktemp("tmp")):
        yield
    left = sorted(temp_folder.playgrounds(machines) - before)
    if left:
        said = (
            f"the demo's playgrounds {', '.join(left)} were made in {machines} while the tests "
            "ran: a test started mm with a TMPDIR not the run's own (or another program on the "
            "machine made them meanwhile)"
        )
        if os.environ.get("CI"):
            pytest.fail(said)
        print(f"\nwarning: {said}", file=sys.stderr)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The demo's small project (greet.py, its test, a README) in this test's own folder."""
    return folders.playground(tmp_path / "project")


@pytest.fixture
def fixed_folder() -> Iterator[Path]:
    """The demo's small project in the one folder whose path the window pictures show
    (/tmp/mm-test-playground), held by this test alone until it ends: another run waits."""
    with folders.fixed_folder() as folder:
        yield folder


@pytest.fixture
def work(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """This process's environment isolated (no MM_* or OPENAI_* of the developer's, HOME in
    tmp_path/home) for tests whose code starts `mm` itself; returns a working folder."""
    isolate(monkeypatch, tmp_path / "home")
    work = tmp_path / "work"
    work.mkdir()
    return work


@pytest.fixture
def no_process_left() -> Iterator[None]:
    """After the test, no process it started is still running (within 5 s). mm's launcher
    processes (core/launcher.py) live as long as mm, by design: what runs below them counts."""
    before = set(processes.descendants())
    yield
    left: list[int] = []

    def none_left() -> bool:
        left[:] = [
            p for p in processes.descendants() if p not in before and not processes.is_launcher(p)
        ]
        return not left

    assert wait_until(none_left, 5), [processes.cmdline(pid) for pid in left]


@pytest.fixture(autouse=True, scope="session")
def _private_tmux_server() -> Iterator[None]:
    """The tests' tmux runs on a server of its own (support/terminal.py): it goes at the end of
    the run, whatever a test left on it. The default server, the person's, is never named."""
    yield
    from support.terminal import kill_server

    kill_server()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--under-load",
        action="store_true",
        help="run the tests with two busy loops per core for the whole run (make test-load): "
        "a test that fails only then waits on time somewhere, or races",
    )


@pytest.fixture(autouse=True)
def _idle_priority(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked `idle_priority` needs work a program does at the kernel's idle priority
    (clangd's index), which busy loops starve: it runs with them stopped (support/load.py)."""
    if request.node.get_closest_marker("idle_priority") is None:
        yield
        return
    from support.load import paused

    with paused():
        yield


@pytest.fixture(autouse=True, scope="session")
def _under_load(request: pytest.FixtureRequest) -> Iterator[None]:
    if not request.config.getoption("--under-load"):
        yield
        return
    from support.load import busy_cores

    with busy_cores():
        yield
