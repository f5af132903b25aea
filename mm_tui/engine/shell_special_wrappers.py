"""Wrappers with a syntax of their own: `env` (assignments, then the command), `find -exec …
;`, the shells (`bash -c 'line'`, `bash FILE`), `su`/`runuser`/`sg` (a user, then the shell's
words), `watch`, `script -c`, `parallel … :::`, `firejail`, and the builtins that take code as a
string (`eval`, `trap`, `alias`, `.`/`source`). `SPECIAL` maps each name to its reader."""

from __future__ import annotations

import os

from mm_tui.engine.shell_options import (
    Inner,
    Options,
    Unreadable,
    Word,
    after_options,
    option_width,
    opts,
    risky_name,
)

SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh"})

ENV_OPTIONS = opts("-u --unset -C --chdir -S --split-string", "- -i --ignore-environment -0 --null")
SHELL_FLAGS = frozenset("abefhiklmnprstuvxBCEHP")  # bash's one-letter options without a value
# their first word is a user or group, and what follows goes to that user's shell
USER_SHELLS: dict[str, Options] = {
    "su": opts(
        "-s --shell -g --group -G --supp-group -w --whitelist-environment",
        "- -l --login -m -p --preserve-environment -P --pty",
        line="-c --command --session-command",
    ),
    "runuser": opts(
        "-u --user -s --shell -g --group -G --supp-group -w --whitelist-environment",
        "- -l --login -m -p --preserve-environment -P --pty",
        line="-c --command --session-command",
    ),
    "sg": opts("", "", line="-c"),
}
WATCH = opts(
    "-n --interval -q --equexit",
    "-t --no-title -b --beep -e --errexit -g --chgexit -c --color -C --no-color -p --precise "
    "-w --no-wrap -x --exec -r --no-rerun -d --differences",
)
SCRIPT = opts(
    "-E --echo -I --log-in -O --log-out -B --log-io -T --log-timing -m --logging-format -o "
    "--output-limit",
    "-a --append -e --return -f --flush --force -q --quiet",
    line="-c --command",
)
PARALLEL = opts("-j --jobs --halt -N -n --max-args", "-k --keep-order -q --quote -X -m -0 --null")
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def _env(words: tuple[Word, ...]) -> Inner | None:
    i, assigns = 1, False
    while i < len(words):
        word = words[i]
        if word is None:
            raise Unreadable
        if word in ("-S", "--split-string") or word.startswith("--split-string="):
            raise Unreadable  # env -S 'cmd args' splits a string of its own
        if word.startswith("-"):
            i += 1 if word in ("--", "-") else option_width(word, ENV_OPTIONS)
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
    """`bash -c 'line'` (or `-lc`, `-ec`) runs the line; `bash script.sh` and `bash` alone
    (reading its input) run what nobody sees here: a rule may name the shell, and a deny
    rule might match what runs."""
    for i, word in enumerate(words[1:], start=1):
        if word is None:
            raise Unreadable
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            if not set(word[1:]) <= SHELL_FLAGS | {"c"} or i + 1 >= len(words):
                raise Unreadable
            script = words[i + 1]
            return Inner(script_unknown=True) if script is None else Inner(script=script)
        if word in ("-o", "-O", "+o", "+O", "--rcfile", "--init-file"):
            raise Unreadable  # an option with a value: read no further
        if not word.startswith(("-", "+")):
            break
    return Inner(keep_wrapper=True, script_unknown=True)


def _user_shell(words: tuple[Word, ...]) -> Inner | None:
    """`su [user] -c 'line'`, `runuser -u user -- cmd`, `sg group -c 'line'`."""
    base = os.path.basename(str(words[0]))
    options = USER_SHELLS[base]
    rest, line = after_options(words[1:], options)
    if line is not None:
        return Inner(keep_wrapper=True, script=line)
    if base == "runuser" and any(w in ("-u", "--user") for w in words[1:]):
        return Inner(words=rest, keep_wrapper=True) if rest else None
    rest = rest[1:]  # the user or group
    more, line = after_options(rest, options) if rest else ((), None)
    if line is not None:
        return Inner(keep_wrapper=True, script=line)
    return Inner(keep_wrapper=True, script_unknown=True) if more else None


def _watch(words: tuple[Word, ...]) -> Inner | None:
    """`watch -n 1 'line'`: the rest, joined, goes to `sh -c` (or, with -x, runs itself)."""
    rest, _ = after_options(words[1:], WATCH)
    if not rest:
        return None
    if any(w in ("-x", "--exec") for w in words[1:]):
        return Inner(words=rest)
    if any(w is None for w in rest):
        return Inner(script_unknown=True)
    return Inner(script=" ".join(str(w) for w in rest))


def _script(words: tuple[Word, ...]) -> Inner | None:
    """`script -c 'line' log`: only -c runs a command (else a shell, on the terminal)."""
    _, line = after_options(words[1:], SCRIPT)
    return Inner(script=line) if line is not None else None


def _parallel(words: tuple[Word, ...]) -> Inner | None:
    """`parallel [options] cmd ::: args`: the command, with words that come at run time."""
    rest, _ = after_options(words[1:], PARALLEL)
    end = next((i for i, w in enumerate(rest) if w in (":::", "::::", ":::+")), len(rest))
    command = rest[:end]
    if not command:
        raise Unreadable  # the commands come from the input: nobody knows them
    return Inner(words=command, open_end=True)


def _firejail(words: tuple[Word, ...]) -> Inner | None:
    """`firejail --net=none --private cmd`: its options are all `--name` or `--name=value`."""
    i = 1
    while i < len(words) and (words[i] or "").startswith("--"):
        i += 1
    if i < len(words) and words[i] is None:
        raise Unreadable
    return Inner(words=words[i:]) if words[i:] else None


def _trap(words: tuple[Word, ...]) -> Inner | None:
    """`trap 'line' EXIT`: the line runs later, in this shell."""
    args = [w for w in words[1:] if w != "--"]
    if not args or args[0] in ("-l", "-p", "-"):
        return None
    if args[0] is None:
        return Inner(keep_wrapper=True, script_unknown=True)
    return Inner(keep_wrapper=True, script=args[0]) if args[0] else None


def _alias(words: tuple[Word, ...]) -> Inner | None:
    """`alias r=rm`: an alias is code that a later line may run under another name."""
    bodies = [w.partition("=")[2] if w is not None else None for w in words[1:]]
    if any(b is None for b in bodies):
        return Inner(keep_wrapper=True, script_unknown=True)
    lines = [b for b in bodies if b]
    return Inner(keep_wrapper=True, script="; ".join(str(b) for b in lines)) if lines else None


def _eval(words: tuple[Word, ...]) -> Inner | None:
    parts = words[1:]
    if any(p is None for p in parts):
        return Inner(script_unknown=True)
    return Inner(script=" ".join(p for p in parts if p is not None))


def _source(words: tuple[Word, ...]) -> Inner | None:
    """`. file`, `source <(…)`: code nobody sees here runs in this shell."""
    return Inner(keep_wrapper=True, script_unknown=True) if len(words) > 1 else None


SPECIAL = {
    "su": _user_shell,
    "runuser": _user_shell,
    "sg": _user_shell,
    "watch": _watch,
    "script": _script,
    "parallel": _parallel,
    "firejail": _firejail,
    "env": _env,
    "find": _find,
    "eval": _eval,
    ".": _source,
    "source": _source,
    "trap": _trap,
    "alias": _alias,
    **{shell: _shell for shell in SHELLS},
}
