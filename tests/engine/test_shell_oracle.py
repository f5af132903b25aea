"""The shell oracle sees what bash runs, and nothing it runs can touch the machine.

`support.shell_oracle` is what the permission corpus test trusts for what a line really runs:
these hold it to that on lines whose answer is known, and check that a line meant to do harm
finds stubs, a read-only system and a private /tmp.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import shell_oracle
from support.shell_oracle import OracleRefused, ShellOracle, check_path, runs_pattern

NAMES = {"rm", "git", "curl", "ls", "cat", "echo", "touch", "id"}


@pytest.fixture(scope="module")
def oracle() -> Iterator[ShellOracle]:
    reason = shell_oracle.missing()
    if reason is not None:
        pytest.skip(reason)
    with ShellOracle(NAMES) as made:
        yield made


@pytest.mark.parametrize(
    ("line", "ran"),
    [
        ("sudo rm -rf /", [["sudo", "rm", "-rf", "/"], ["rm", "-rf", "/"]]),
        (
            "sudo -u root -- git push",
            [["sudo", "-u", "root", "--", "git", "push"], ["git", "push"]],
        ),
        ("echo rm", []),
        ("git rm x", [["git", "rm", "x"]]),
        ("/bin/rm -rf /", [["rm", "-rf", "/"]]),
        ("/usr/local/bin/rm x", [["rm", "x"]]),
        (
            'r\\m a; "rm" b; \\rm c; command rm d',
            [["rm", "a"], ["rm", "b"], ["rm", "c"], ["rm", "d"]],
        ),
        ("echo / | xargs rm -rf", [["rm", "-rf", "/"]]),
        (": > a; find . -name a -exec rm {} +", [["rm", "./a"]]),
        ("timeout 5 nice -n 5 env A=1 nohup stdbuf -oL rm x", [["rm", "x"]]),
        ("bash -c 'git push' && sh -c 'curl u'", [["git", "push"], ["curl", "u"]]),
        ('eval "rm -rf /"', [["rm", "-rf", "/"]]),
        ("$(echo rm) -rf /", [["rm", "-rf", "/"]]),
        ("f() { git push; }; f", [["git", "push"]]),
        ("nohup rm late & echo now", [["rm", "late"]]),
        ("frobnicate 'a b'", [["frobnicate", "a b"]]),
        (
            "rm $'tab\\there' 'quote\"' 'back\\slash' $'bell\\a'",
            [["rm", "tab\there", 'quote"', "back\\slash", "bell\a"]],
        ),
    ],
)
def test_it_logs_what_bash_runs(oracle: ShellOracle, line: str, ran: list[list[str]]) -> None:
    run = oracle.run(line)
    assert not run.timed_out
    assert run.argvs == ran


def test_the_line_runs_as_nobody_in_an_empty_home_with_only_path(oracle: ShellOracle) -> None:
    run = oracle.run(
        'shopt -s nullglob dotglob; f=(*); logged "$EUID" "$HOME" "$PWD" "$PATH" "${#f[@]}" "${LANG-}" "$-"'
    )
    [[name, uid, home, cwd, path, files, lang, _]] = run.argvs
    assert (name, home == cwd, path, files, lang) == ("logged", True, "/tmp/stubs", "0", "")
    if os.geteuid() == 0:
        assert uid == "65534"


def test_nothing_outside_a_private_tmp_can_be_written(oracle: ShellOracle, tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    host_tmp = Path("/tmp") / f"mm-oracle-probe-{os.getpid()}"
    run = oracle.run(
        f"echo x > {probe}; logged $?; echo x > /etc/mm-oracle-probe; logged $?; "
        f"echo x > {host_tmp}; logged $?; /bin/rm -rf {tmp_path}; logged $?"
    )
    assert run.argvs == [
        ["logged", "1"],
        ["logged", "1"],
        ["logged", "0"],
        ["rm", "-rf", str(tmp_path)],
        ["logged", "0"],
    ]
    assert tmp_path.is_dir() and not probe.exists() and not host_tmp.exists()
    assert not Path("/etc/mm-oracle-probe").exists()


def test_a_line_that_never_ends_is_cut_and_said_to_be(oracle: ShellOracle) -> None:
    run = oracle.run("rm first; while :; do :; done", timeout=1)
    assert run.timed_out
    assert run.argvs == [["rm", "first"]]
    assert oracle.run("rm next").argvs == [["rm", "next"]]


def test_it_refuses_a_path_with_more_than_the_stubs() -> None:
    check_path({"PATH": "/tmp/stubs"})
    for path in ("/tmp/stubs:/usr/bin", "/usr/bin:/tmp/stubs", "", "/tmp/stub"):
        with pytest.raises(OracleRefused):
            check_path({"PATH": path})


def test_it_refuses_to_run_when_a_name_is_not_a_stub() -> None:
    reason = shell_oracle.missing()
    if reason is not None:
        pytest.skip(reason)
    with ShellOracle(NAMES) as broken:
        (broken.base / "stubs" / "rm").unlink()
        with pytest.raises(OracleRefused, match="/usr/bin/rm is not the stub"):
            broken.run("echo hi")


def test_patterns_match_argvs_as_the_rules_read_them() -> None:
    assert runs_pattern(["rm", "-rf", "/"], "rm *")
    assert runs_pattern(["rm"], "rm *")
    assert runs_pattern(["/usr/bin/git", "push", "origin"], "git push *")
    assert not runs_pattern(["git", "rm", "x"], "rm *")
    assert not runs_pattern(["git", "-C", "x", "push"], "git push *")
    assert runs_pattern(["rm", "-rf", "x"], "rm -r* *")
    assert not runs_pattern(["rm", "-f", "x"], "rm -r* *")
    assert runs_pattern(["git", "push"], "git push")
    assert not runs_pattern(["git", "push", "x"], "git push")
    assert runs_pattern(["git", "push", "x"], "git * x")
