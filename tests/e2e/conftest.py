"""End-to-end tests: mm against a real llama.cpp server (llama-cpp-python) running
SmolLM2-135M-Instruct on 127.0.0.1. `make e2e` sets up the server's virtual environment and runs
them with MM_E2E_PYTHON naming its python; without that variable (plain `make test`,
`pytest` at the top) this folder is not collected at all.

One server serves the whole session: the `llama` fixture starts it on a free port and stops it in
its teardown, whatever happened. A 135M model answers poorly, so the tests check the protocol and
mm's robustness (turns end, calls get results, sessions are whole), never what the model says.

Which path an answer takes (words, or a tool call) is the model's choice. At temperature 0, with
mm's system prompt and tools and the fixed project folder below, it makes the same choice every
run; a test that needs one path names its prompt, and says so when the model takes the other
(a change to the system prompt or to the tools' descriptions may call for another prompt).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from e2e_helpers import write_config  # noqa: E402
from llama_server import PYTHON_ENV, LlamaServer  # noqa: E402
from support.folders import held  # noqa: E402

if not os.environ.get(PYTHON_ENV):
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    log = tmp_path_factory.getbasetemp() / "llama-server.log"
    server = LlamaServer(log=log)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def server(llama: LlamaServer) -> Iterator[LlamaServer]:
    """The session's server, idle when the test starts (an answer a test left behind runs to
    its end first), running when it ends (a test that stopped it gets it continued)."""
    llama.wait_idle()
    yield llama
    llama.resume()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A real model is slow, and slower on a shared machine: five minutes a test, not two."""
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(300))


# The folder is named in mm's system prompt, so in what the model answers: at temperature 0 the
# same name gives the same answers from one run to the next. A fixed folder is shared by the runs
# of the machine: a test holds a lock on it while it works there (support/folders.py), and a run
# beside it waits.
PROJECT = Path(tempfile.gettempdir()) / "mm-e2e-project"


@pytest.fixture
def project() -> Iterator[Path]:
    """A small project folder for mm to work in, with a config file (temperature 0); always the
    same folder, emptied for each test and held by it until it ends."""
    with held(PROJECT) as folder:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        (folder / "notes.txt").write_text("alpha\nbeta\n", encoding="utf-8")
        write_config(folder)
        yield folder
