"""What the permission rules' shell reader shares: a word (its value, or None when only the run
knows it), a line not read whole (`Unreadable`), what a wrapper runs (`Inner`), and a wrapper's
options (`Options`) with the reading of them, so that `shell_wrappers.py` (the table of
wrappers) and `shell_special_wrappers.py` (those with a syntax of their own) read options one
way."""

from __future__ import annotations

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
    line: frozenset[str] = frozenset()  # options whose value is a command line (`su -c`)


def opts(valued: str, flags: str, leading: int = 0, line: str = "") -> Options:
    lines = frozenset(line.split())
    return Options(frozenset(valued.split()) | lines, frozenset(flags.split()), leading, lines)


OPTIONAL_VALUE = ("-i", "-e", "-l")  # xargs' options whose value, if any, is glued: -i{}


def after_options(
    words: tuple[Word, ...], options: Options, numeric: bool = False
) -> tuple[tuple[Word, ...], str | None]:
    """The words after the wrapper's options (and its leading words), and the command line an
    option gave (`flock -c 'line'`)."""
    i, line = 0, None
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
        width = option_width(word, options)
        if word.split("=", 1)[0] in options.line:
            line = line_value(words, i, width)
        i += width
    i += options.leading
    if i > len(words):
        raise Unreadable
    if line is None and i < len(words) and words[i] in options.line:  # flock FILE -c 'line'
        line = line_value(words, i, 2)
        return (), line
    return words[i:], line


def line_value(words: tuple[Word, ...], i: int, width: int) -> str:
    word = words[i]
    value = words[i + 1] if width == 2 and i + 1 < len(words) else None
    if width == 1 and word is not None and "=" in word:
        value = word.split("=", 1)[1]
    if value is None:
        raise Unreadable
    return value


def option_width(word: str, options: Options) -> int:
    """How many words an option takes: 1 alone or glued to its value, 2 with its value next."""
    if word in options.flags:
        return 1
    if word in options.valued:
        return 2
    if word.startswith("--") and word.split("=", 1)[0] in options.valued | options.flags:
        return 1  # --signal=KILL, --mount=/proc/1/ns/mnt
    short = word[:2]
    if not word.startswith("--") and short in options.valued:
        return 1  # -n5, -I{}
    if short in OPTIONAL_VALUE and short in options.flags:
        return 1  # xargs -i{}
    if not word.startswith("--") and all(f"-{c}" in options.flags for c in word[1:]):
        return 1  # -Ei
    raise Unreadable
