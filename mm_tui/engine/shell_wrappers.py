"""Programs that run another command given in their words, and how to find that command.

`sudo -u bob rm -rf x` runs `rm -rf x`; `timeout -s KILL 5 make` runs `make`; `find . -exec rm
{} ;` runs `rm {}`; `bash -c 'rm x'` and `eval rm x` run a line of their own. Each wrapper's
options are known here (those that take a value, and those that do not); an option not known
makes the command unreadable (`Unreadable`), since guessing where the inner command starts
would let a rule check the wrong words."""

from __future__ import annotations

import os

from mm_tui.core.frozen import frozen

Word = str | None  # None: a value known only when the line runs


class Unreadable(Exception):
    """The line, or a wrapper in it, is not read whole."""


# a prefix assignment of one of these changes which program runs or what it loads
RISKY_NAMES = frozenset(
    {
        "BASH_ENV",
        "ENV",
        "IFS",
        "SHELLOPTS",
        "BASHOPTS",
        "PROMPT_COMMAND",
        "PS4",
        "NODE_OPTIONS",
        "PERL5OPT",
        "PERL5LIB",
        "RUBYOPT",
        "PYTHONSTARTUP",
        "PYTHONHOME",
        "EDITOR",
        "VISUAL",
        "PAGER",
    }
)
RISKY_PREFIXES = ("LD_", "DYLD_", "GIT_")
SAFE_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
NESTING = 8  # bash -c "bash -c '…'" this deep at most, then unreadable


def risky_name(name: str) -> bool:
    return name in RISKY_NAMES or name.endswith("PATH") or name.startswith(RISKY_PREFIXES)


SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh"})


@frozen
class Inner:
    words: tuple[Word, ...] = ()
    keep_wrapper: bool = False  # the wrapper is itself a command a rule may name (sudo)
    assigns: bool = False  # it sets variables a rule should distrust (env PATH=…)
    open_end: bool = False  # more words come at run time (xargs)
    script: str | None = None  # a line to read as a line of its own (bash -c, eval)
    script_unknown: bool = False  # such a line, but not known before the run


@frozen
class Options:
    """A wrapper's options: `valued` take the next word (or are glued to it: `-n5`,
    `--signal=KILL`), `flags` do not; `leading` words that follow the options before the
    command (timeout's duration)."""

    valued: frozenset[str]
    flags: frozenset[str]
    leading: int = 0


def _opts(valued: str, flags: str, leading: int = 0) -> Options:
    return Options(frozenset(valued.split()), frozenset(flags.split()), leading)


WRAPPERS: dict[str, Options] = {
    "sudo": _opts(
        "-u --user -g --group -h --host -p --prompt -C --close-from -D --chdir -r --role -t "
        "--type -U --other-user -T --command-timeout -R --chroot",
        "-E -H -n -S -b -k -K -A -P -s -i --preserve-env --set-home --non-interactive --stdin "
        "--background --reset-timestamp --askpass --preserve-groups --shell --login",
    ),
    "doas": _opts("-u -C", "-n -s"),
    "timeout": _opts(
        "-s --signal -k --kill-after", "--preserve-status --foreground -v --verbose", 1
    ),
    "nice": _opts("-n --adjustment", ""),
    "ionice": _opts("-c --class -n --classdata", "-t --ignore"),
    "nohup": _opts("", ""),
    "setsid": _opts("", "-c --ctty -f --fork -w --wait"),
    "stdbuf": _opts("-i --input -o --output -e --error", ""),
    "time": _opts("-f --format -o --output", "-p -a --append -v --verbose --portability"),
    "exec": _opts("-a", "-c -l"),
    "builtin": _opts("", ""),
    "command": _opts("", "-p"),
    "xargs": _opts(
        "-a --arg-file -d --delimiter -E -e --eof -I -i --replace -L -l --max-lines -n "
        "--max-args -P --max-procs -s --max-chars --process-slot-var",
        "-0 --null -o --open-tty -p --interactive -r --no-run-if-empty -t --verbose -x --exit "
        "--show-limits",
    ),
}
ENV_OPTIONS = _opts("-u --unset -C --chdir -S --split-string", "-i --ignore-environment -0 --null")
KEEP = frozenset({"sudo", "doas"})
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def inner_command(words: tuple[Word, ...]) -> Inner | None:
    """What `words` runs when its program is a wrapper; None when it runs nothing else."""
    name = words[0]
    if name is None:
        return None
    base = os.path.basename(name)
    if base == "env":
        return _env(words)
    if base == "find":
        return _find(words)
    if base in SHELLS:
        return _shell(words)
    if base == "eval":
        parts = words[1:]
        if any(p is None for p in parts):
            return Inner(script_unknown=True)
        return Inner(script=" ".join(p for p in parts if p is not None))
    options = WRAPPERS.get(base)
    if options is None:
        return None
    if base == "command" and any(w in ("-v", "-V") for w in words[1:2]):
        return None  # `command -v x` looks x up, runs nothing
    rest = _after_options(words[1:], options, numeric=base == "nice")
    if not rest:
        return None  # `sudo -v`, `nice`, `time`: nothing else runs
    return Inner(words=rest, keep_wrapper=base in KEEP, open_end=base == "xargs")


def _after_options(words: tuple[Word, ...], options: Options, numeric: bool = False) -> tuple:
    """The words after the wrapper's options (and its leading words)."""
    i = 0
    while i < len(words):
        word = words[i]
        if word is None:
            raise Unreadable  # an option or the command, nobody knows
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-":
            break
        if numeric and word[1:].isdigit():  # nice -5
            i += 1
            continue
        i += _option_width(word, options)
    i += options.leading
    if i > len(words):
        raise Unreadable
    return words[i:]


def _option_width(word: str, options: Options) -> int:
    """How many words an option takes: 1 alone or glued to its value, 2 with its value next."""
    if word in options.flags:
        return 1
    if word in options.valued:
        return 2
    if word.startswith("--") and word.split("=", 1)[0] in options.valued:
        return 1
    short = word[:2]
    if not word.startswith("--") and short in options.valued:
        return 1  # -n5, -I{}
    if not word.startswith("--") and all(f"-{c}" in options.flags for c in word[1:]):
        return 1  # -Ei
    raise Unreadable


def _env(words: tuple[Word, ...]) -> Inner | None:
    i, assigns = 1, False
    while i < len(words):
        word = words[i]
        if word is None:
            raise Unreadable
        if word in ("-S", "--split-string") or word.startswith("--split-string="):
            raise Unreadable  # env -S 'cmd args' splits a string of its own
        if word.startswith("-") and word != "-":
            i += 1 if word == "--" else _option_width(word, ENV_OPTIONS)
            continue
        if "=" in word:
            assigns = assigns or risky_name(word.split("=", 1)[0])
            i += 1
            continue
        break
    if i >= len(words):
        return None  # `env` alone prints the environment
    return Inner(words=words[i:], assigns=assigns)


def _find(words: tuple[Word, ...]) -> Inner | None:
    """`find … -exec CMD … ;` (or `+`): the first command it runs; the others are found by
    the rules through `more_find_commands`."""
    for i, word in enumerate(words):
        if word in FIND_EXEC:
            end = next((j for j in range(i + 1, len(words)) if words[j] in (";", "+")), len(words))
            command = tuple(None if w == "{}" else w for w in words[i + 1 : end])
            if not command:
                raise Unreadable
            rest = words[end + 1 :]
            if any(w in FIND_EXEC for w in rest):
                raise Unreadable  # a second -exec: read one, refuse to guess the other
            return Inner(words=command, keep_wrapper=True)
    return None


def _shell(words: tuple[Word, ...]) -> Inner | None:
    """`bash -c 'line'` runs the line; `bash script.sh` a file (itself a command a rule may
    name); `bash` alone reads stdin: nothing known."""
    for i, word in enumerate(words[1:], start=1):
        if word is None:
            raise Unreadable
        if word == "-c":
            if i + 1 >= len(words):
                raise Unreadable
            script = words[i + 1]
            return Inner(script_unknown=True) if script is None else Inner(script=script)
        if not word.startswith("-"):
            return None
        if "c" in word[1:] and not word.startswith("--"):
            raise Unreadable  # -xc 'line': glued flags with -c
    return Inner(script_unknown=True)
