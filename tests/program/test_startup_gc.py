"""Window mode runs its start-up without garbage collection (`cli.run_window`): the boot resumes
it when it ends, however it ends, after freezing what start-up made."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from mm_tui.cli import parser, window_boot


@pytest.fixture
def paused() -> Iterator[None]:
    """The collector paused as `run_window` pauses it; this test process's state restored."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if was:
            gc.enable()
        else:
            gc.disable()


async def test_the_boot_resumes_the_collector_once_ready(work: Path, paused: None) -> None:
    started = await window_boot(parser().parse_args(["--demo"]), work, gc_paused=True)()
    try:
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0  # what start-up made is left out of later passes
    finally:
        await started.engine.aclose()


async def test_a_failed_boot_resumes_it_too(work: Path, paused: None) -> None:
    (work / ".mm").mkdir()
    (work / ".mm" / "config.yaml").write_text("maxOuptut: 5\n")
    with pytest.raises(RuntimeError, match="maxOuptut"):
        await window_boot(parser().parse_args([]), work, gc_paused=True)()
    assert gc.isenabled()


async def test_a_boot_that_did_not_pause_it_leaves_the_collector_alone(
    work: Path, paused: None
) -> None:
    """Tests (and any caller but `run_window`) boot with the collector as they have it."""
    frozen = gc.get_freeze_count()
    started = await window_boot(parser().parse_args(["--demo"]), work)()
    try:
        assert not gc.isenabled()
        assert gc.get_freeze_count() == frozen
    finally:
        await started.engine.aclose()
