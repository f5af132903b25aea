"""The loop detector and runaway detector of the reference (docs/tools.md), to the letter."""

from hypothesis import given
from hypothesis import strategies as st

from mm_tui.engine.guards import (
    LOOP_WARNING,
    LoopDetector,
    RunawayDetector,
    loop_stop_message,
)


def test_loop_warning_text_is_the_reference() -> None:
    assert LOOP_WARNING == (
        "[LOOP_DETECTED: You have attempted the same action multiple times with the same result. "
        "Please try a different approach or provide more information.]"
    )


def test_loop_stop_message_names_the_tool() -> None:
    assert loop_stop_message("edit_file") == (
        "[error: the model repeated the same edit_file call 6 times in a row with the same "
        "failing result — turn stopped by the loop detector; rephrase the request, or fix what "
        "the tool kept reporting]"
    )


def test_three_identical_warn_six_stop() -> None:
    d = LoopDetector()
    verdicts = [d.record("bash", '{"command": "ls"}', "a\n") for _ in range(6)]
    assert [v.warn for v in verdicts] == [False, False, True, True, True, False]
    assert [v.stop for v in verdicts] == [False] * 5 + [True]


def test_a_different_call_resets_the_count() -> None:
    d = LoopDetector()
    for _ in range(2):
        d.record("bash", "x", "out")
    assert not d.record("bash", "x", "other output").warn
    assert not d.record("bash", "y", "other output").warn
    d.record("bash", "y", "other output")
    assert d.record("bash", "y", "other output").warn


def test_same_input_different_output_is_not_a_loop() -> None:
    d = LoopDetector()
    assert not any(d.record("bash", "date", str(i)).warn for i in range(10))


def test_reset() -> None:
    d = LoopDetector()
    for _ in range(3):
        d.record("t", "i", "o")
    d.reset()
    assert d.record("t", "i", "o").count == 1


def test_runaway_repeated_pattern_stops() -> None:
    args = '{"content": "' + '"a": 1, ' * 60
    message = RunawayDetector().check(args)
    assert message is not None
    assert message.startswith(
        "[error: the model's tool call ran away: its arguments repeat the same pattern "
        f"({len(args)} characters so far: …"
    )
    assert message.endswith(") — generation stopped; rephrase the request, or try another model]")


def test_runaway_too_large_stops() -> None:
    text = "".join(f"line {i} of a big file\n" for i in range(20000))
    message = RunawayDetector().check(text)
    assert message is not None and "exceed 256 KB" in message


def test_runaway_counts_bytes_not_characters() -> None:
    """90,000 three-byte characters pass 256 KB; 80,000 do not (nor 200,000 ASCII)."""
    assert RunawayDetector().check("€" * 90_000) is not None
    assert RunawayDetector().check("€" * 80_000) is None
    assert RunawayDetector().check("x" * 200_000) is None


def test_runaway_ignores_short_and_ordinary_arguments() -> None:
    r = RunawayDetector()
    assert r.check('{"command": "ls"}') is None
    assert r.check('{"content": "' + "=" * 400) is None  # a rule line: period 1, not a pattern
    prose = "The quick brown fox jumps over the lazy dog; " * 3 + "then it stops. " + "x" * 10
    assert r.check(prose) is None


def test_runaway_pattern_longer_than_64_is_allowed() -> None:
    block = "".join(chr(65 + i % 26) for i in range(70))
    assert RunawayDetector().check(block * 5) is None


@given(st.text(min_size=4, max_size=64).filter(lambda p: len(set(p)) > 1), st.integers(5, 80))
def test_runaway_any_short_pattern_repeated_is_caught(pattern: str, times: int) -> None:
    args = pattern * max(times, 300 // len(pattern) + 2)
    # The smallest period of `pattern * k` may be shorter than the pattern (abab -> ab);
    # the detector only fires on a smallest period of 4 to 64.
    tail = args[-256:]
    period = next(p for p in range(1, 65) if tail[p:] == tail[:-p])
    assert (RunawayDetector().check(args) is not None) == (period >= 4)
