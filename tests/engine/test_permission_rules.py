"""The permission rules: which simple commands a bash line runs, and what the person's patterns
say of them (engine/shell_commands.py, shell_wrappers.py, permission_rules.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mm_tui.engine.permission_rules import PermissionRules, pattern_error
from mm_tui.engine.shell_commands import simple_commands

RULES = PermissionRules.from_config(
    {
        "bash": {
            "git status": "allow",
            "git log *": "allow",
            "ls *": "allow",
            "cat *": "allow",
            "rm *": "deny",
            "git push *": "deny",
            "*": "ask",
        }
    }
)


def action(line: str) -> str | None:
    verdict = RULES.check("bash", {"command": line})
    return verdict and verdict.action


@pytest.mark.parametrize(
    ("line", "names"),
    [
        ("git status && rm -rf x", ["git", "rm"]),
        ('echo "$(rm x)"', ["echo", "rm"]),
        ("echo `rm x`", ["echo", "rm"]),
        ("(cd a; rm x)", ["cd", "rm"]),
        ("f() { rm x; }; f", ["rm", "f"]),
        ("for f in a b; do rm $f; done", ["rm"]),
        ("ls | xargs rm", ["ls", "rm"]),
        ("sudo -u bob rm -rf /", ["sudo", "rm"]),
        ("env A=1 timeout -s KILL 5 nice -n 3 nohup rm x", ["rm"]),
        ("find . -name '*.pyc' -exec rm {} \\;", ["find", "rm"]),
        ("bash -c 'ls; rm x'", ["ls", "rm"]),
        ("eval rm x", ["rm"]),
        ("diff <(ls a) <(rm b)", ["diff", "ls", "rm"]),
        ("command rm x", ["rm"]),
        ("command -v rm", ["command"]),
        ("r\\m x", ["rm"]),
        ('"rm" x', ["rm"]),
        ("cat <<EOF\nrm x\nEOF", ["cat"]),
        ("busybox rm x", ["rm"]),
        ("pkexec rm x", ["pkexec", "rm"]),
        ("flock -w 5 /tmp/lock rm x", ["rm"]),
        ("flock /tmp/lock -c 'rm x'", ["rm"]),
        ("chroot /srv rm x", ["chroot", "rm"]),
        ("su -c 'rm x' bob", ["su", "rm"]),
        ("su bob -c 'rm x'", ["su", "rm"]),
        ("runuser -u bob -- rm x", ["runuser", "rm"]),
        ("sg wheel -c 'rm x'", ["sg", "rm"]),
        ("setpriv --reuid=1000 --clear-groups rm x", ["setpriv", "rm"]),
        ("unshare -r --mount=/tmp/ns rm x", ["rm"]),
        ("strace -f -o trace.txt rm x", ["rm"]),
        ("watch -n 1 rm x", ["rm"]),
        ("watch -x rm x", ["rm"]),
        ("script -q -c 'rm x' log.txt", ["rm"]),
        ("parallel -j 4 rm ::: a b", ["rm"]),
        ("firejail --net=none --private rm x", ["rm"]),
        ("taskset -c 0 rm x", ["rm"]),
        ("chrt -f 10 rm x", ["rm"]),
        ("nsenter -t 1 -m rm x", ["rm"]),
    ],
)
def test_every_simple_command_of_a_line_is_found(line: str, names: list[str]) -> None:
    commands = simple_commands(line)
    assert commands is not None
    assert [c.name for c in commands] == names


@pytest.mark.parametrize(
    "line", ["echo $(", "sudo --frobnicate rm x", "if then fi", "env -S 'rm x'"]
)
def test_a_line_not_read_whole_is_none_and_asks(line: str) -> None:
    assert simple_commands(line) is None
    verdict = RULES.check("bash", {"command": line})
    assert verdict is not None and (verdict.action, verdict.cause) == ("ask", "unreadable")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("git status", "allow"),
        ("git status --short", "ask"),  # "git status" names the words exactly
        ("git log --oneline -5", "allow"),
        ("git log", "allow"),  # a last * stands for none too
        ("ls -la && cat README.md", "allow"),
        ("ls && make", "ask"),
        ("ls; rm -rf x", "deny"),
        ("/bin/rm x", "deny"),
        ("\\rm x", "deny"),
        ("sudo rm x", "deny"),
        ("ls | xargs rm", "deny"),
        ("find . -exec rm {} +", "deny"),
        ("bash -c 'rm x'", "deny"),
        ("git push origin main", "deny"),
        ("git push", "deny"),
        ("$CMD -rf /", "ask"),  # might be rm
        ("git $SUB origin", "ask"),  # might be git push
        ("./ls -la", "ask"),  # an allow names the very program
        ("ls -la > /etc/motd", "ask"),  # output outside the project
        ("ls -la > listing.txt", "allow"),
        ("ls -la 2>&1 >/dev/null", "allow"),
        ("PATH=/tmp/evil:$PATH ls", "ask"),
        ("export PATH=/tmp/evil; ls", "ask"),
        ("git -c core.pager=sh log", "ask"),
        ("ls $HOME", "allow"),  # `ls *` takes any word, known or not
        ("git rm x", "ask"),  # rm as an argument is not rm
        ("echo rm", "ask"),
        ("# only a comment", None),
    ],
)
def test_what_the_rules_say_of_a_line(line: str, expected: str | None) -> None:
    assert action(line) == expected


def test_deny_beats_allow_whatever_the_order_and_specificity() -> None:
    rules = PermissionRules.from_config({"bash": {"rm -rf build": "allow", "rm *": "deny"}})
    verdict = rules.check("bash", {"command": "rm -rf build"})
    assert verdict is not None and (verdict.action, verdict.rule) == ("deny", "rm *")


def test_the_more_specific_of_allow_and_ask_wins_and_a_tie_asks() -> None:
    rules = PermissionRules.from_config({"bash": {"npm *": "ask", "npm test": "allow"}})
    assert rules.check("bash", {"command": "npm test"}).action == "allow"  # type: ignore[union-attr]
    assert rules.check("bash", {"command": "npm install"}).action == "ask"  # type: ignore[union-attr]
    tie = PermissionRules.from_config({"bash": {"npm t*": "ask", "npm *t": "allow"}})
    assert tie.check("bash", {"command": "npm test"}).action == "ask"  # type: ignore[union-attr]


def test_a_command_without_a_rule_leaves_the_line_to_the_mode() -> None:
    rules = PermissionRules.from_config({"bash": {"ls *": "allow"}})
    assert rules.check("bash", {"command": "ls && make"}) is None
    assert rules.check("bash", {"command": "ls -la"}).action == "allow"  # type: ignore[union-attr]
    assert PermissionRules.from_config({}).check("bash", {"command": "rm x"}) is None


def test_file_tools_take_path_globs_on_the_given_and_the_real_path(tmp_path: Path) -> None:
    rules = PermissionRules.from_config(
        {"read_file": {"**/.env": "deny", "src/**": "allow", "/etc/**": "ask"}}
    )
    (tmp_path / "src").mkdir()
    secret = tmp_path / ".env"
    secret.write_text("KEY=1")
    (tmp_path / "src" / "innocent.txt").symlink_to(secret)

    def verdict(path: Path) -> str | None:
        found = rules.check("read_file", {}, paths=[str(path)], root=tmp_path)
        return found and found.action

    assert verdict(tmp_path / "src" / "a.py") == "allow"
    assert verdict(tmp_path / ".env") == "deny"
    assert verdict(tmp_path / "src" / "deep" / ".env") == "deny"
    assert verdict(tmp_path / "src" / "innocent.txt") == "deny"  # a link to .env is .env
    assert verdict(Path("/etc/passwd")) == "ask"
    assert verdict(tmp_path / "README.md") is None


def test_a_tool_given_one_action_and_tool_names_by_glob() -> None:
    rules = PermissionRules.from_config({"fetch_content": "deny", "github_*": "allow"})
    assert rules.check("fetch_content", {"url": "https://x"}).action == "deny"  # type: ignore[union-attr]
    assert rules.check("github_list_issues", {}).action == "allow"  # type: ignore[union-attr]
    assert rules.check("read_file", {}) is None


def test_a_rule_added_in_the_session_counts_at_once() -> None:
    rules = PermissionRules.from_config({"bash": {"*": "ask"}})
    rules.add("bash", "make *", "allow")
    assert rules.check("bash", {"command": "make test"}).action == "allow"  # type: ignore[union-attr]


def test_a_pattern_that_is_not_shell_words_is_named() -> None:
    assert pattern_error("bash", "git log 'oops") is not None
    assert pattern_error("bash", " ") == "a pattern must not be empty"
    assert pattern_error("bash", "git log *") is None


@pytest.mark.parametrize(
    ("command", "offered"),
    [
        ("git log --oneline -5", "git log *"),
        ("ls -la", "ls *"),
        ("echo yes", "echo *"),
        ("python -m pytest -q && git commit", "python -m pytest *"),
        ("npm run test", "npm run *"),
        ("./build.sh --fast", "./build.sh *"),
        ("$CMD -rf /", ""),  # nothing certain to offer
        ("PATH=/x ls", ""),
        ("echo $(", ""),
    ],
)
def test_the_rule_offered_for_a_command(command: str, offered: str) -> None:
    from mm_tui.engine.permission_rules import suggested_pattern

    assert suggested_pattern("bash", {"command": command}, (), None) == offered


def test_the_rule_offered_for_a_file_is_its_folder(tmp_path: Path) -> None:
    from mm_tui.engine.permission_rules import suggested_pattern

    def offered(path: Path) -> str:
        return suggested_pattern("write_file", {}, [str(path)], tmp_path)

    assert offered(tmp_path / "src" / "app" / "x.py") == "src/app/**"
    assert offered(tmp_path / "README.md") == "README.md"
    assert offered(Path("/etc/hosts")) == "/etc/**"
    assert suggested_pattern("fetch_content", {"url": "x"}, (), tmp_path) == "*"


@pytest.mark.parametrize(
    "line",
    [
        "r{m,} -rf x",  # brace expansion: rm r -rf x
        "{rm,-rf,x}",
        "rm${IFS}-rf${IFS}x",
        "$'rm' x",
        "$(echo rm) x",
        "`echo rm` x",
        '"$CMD" x',
        "x=rm; $x -rf y",
    ],
)
def test_what_only_might_be_a_denied_command_is_never_allowed(line: str) -> None:
    rules = PermissionRules.from_config({"bash": {"rm *": "deny", "*": "allow"}})
    verdict = rules.check("bash", {"command": line})
    assert verdict is not None and verdict.action != "allow", verdict
