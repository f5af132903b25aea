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
    line: frozenset[str] = frozenset()  # options whose value is a command line (`su -c`)


def _opts(valued: str, flags: str, leading: int = 0, line: str = "") -> Options:
    lines = frozenset(line.split())
    return Options(frozenset(valued.split()) | lines, frozenset(flags.split()), leading, lines)


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
    "busybox": _opts("", ""),
    "pkexec": _opts("--user", "--disable-internal-agent --keep-cwd"),
    "flock": _opts(
        "-w --wait --timeout -E --conflict-exit-code",
        "-s --shared -x -e --exclusive -n --nb --nonblock -u --unlock -o --close -F --no-fork "
        "--verbose",
        1,
        "-c --command",
    ),
    "chroot": _opts("--userspec --groups", "--skip-chdir", 1),
    "setpriv": _opts(
        "--reuid --regid --ruid --rgid --euid --egid --groups --inh-caps --ambient-caps "
        "--bounding-set --securebits --pdeathsig --selinux-label --apparmor-profile "
        "--landlock-access --landlock-rule",
        "--clear-groups --keep-groups --init-groups --no-new-privs --reset-env -d --dump",
    ),
    "unshare": _opts(
        "--propagation --setgroups -S --setuid -G --setgid --map-user --map-group -R --root -w "
        "--wd",
        "-m -u -i -n -p -U -C -T -f -r -c --mount --uts --ipc --net --pid --user --cgroup "
        "--time --fork --map-root-user --map-current-user --mount-proc --kill-child",
    ),
    "nsenter": _opts(
        "-t --target -S --setuid -G --setgid -w --wd -r --root",
        "-a --all -m --mount -u --uts -i --ipc -n --net -p --pid -C --cgroup -U --user -T "
        "--time -F --no-fork --preserve-credentials",
    ),
    "strace": _opts(
        "-e -o -p -s -u -E -a -b -I -O -P -S -X",
        "-f -ff -c -C -d -D -F -h -i -k -q -qq -r -t -tt -ttt -T -v -V -w -x -xx -y -yy -z -Z",
    ),
    "ltrace": _opts("-e -o -p -s -u -a -n -l -L", "-f -c -C -d -h -i -r -S -t -tt -ttt -T -V -w"),
    "taskset": _opts("", "-a --all-tasks -c --cpu-list", 1),
    "chrt": _opts(
        "-T -P -D --sched-runtime --sched-period --sched-deadline",
        "-b -f -i -o -r -d -a -m -R -v --batch --fifo --idle --other --rr --deadline "
        "--all-tasks --max --reset-on-fork --verbose",
        1,
    ),
    "xargs": _opts(
        "-a --arg-file -d --delimiter -E -I -J -R -S -L --max-lines -n --max-args -P "
        "--max-procs -s --max-chars --process-slot-var",
        "-0 --null -o --open-tty -p --interactive -r --no-run-if-empty -t --verbose -x --exit "
        "--show-limits -i --replace -e --eof -l",
    ),
    "coproc": _opts("", ""),
}
ENV_OPTIONS = _opts(
    "-u --unset -C --chdir -S --split-string", "- -i --ignore-environment -0 --null"
)
OPTIONAL_VALUE = ("-i", "-e", "-l")  # xargs' options whose value, if any, is glued: -i{}
SHELL_FLAGS = frozenset("abefhiklmnprstuvxBCEHP")  # bash's one-letter options without a value
KEEP = frozenset({"sudo", "doas", "pkexec", "su", "runuser", "sg", "chroot", "setpriv"})
# their first word is a user or group, and what follows goes to that user's shell
USER_SHELLS: dict[str, Options] = {
    "su": _opts(
        "-s --shell -g --group -G --supp-group -w --whitelist-environment",
        "- -l --login -m -p --preserve-environment -P --pty",
        line="-c --command --session-command",
    ),
    "runuser": _opts(
        "-u --user -s --shell -g --group -G --supp-group -w --whitelist-environment",
        "- -l --login -m -p --preserve-environment -P --pty",
        line="-c --command --session-command",
    ),
    "sg": _opts("", "", line="-c"),
}
WATCH = _opts(
    "-n --interval -q --equexit",
    "-t --no-title -b --beep -e --errexit -g --chgexit -c --color -C --no-color -p --precise "
    "-w --no-wrap -x --exec -r --no-rerun -d --differences",
)
SCRIPT = _opts(
    "-E --echo -I --log-in -O --log-out -B --log-io -T --log-timing -m --logging-format -o "
    "--output-limit",
    "-a --append -e --return -f --flush --force -q --quiet",
    line="-c --command",
)
PARALLEL = _opts("-j --jobs --halt -N -n --max-args", "-k --keep-order -q --quote -X -m -0 --null")
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def inner_command(words: tuple[Word, ...]) -> Inner | None:
    """What `words` runs when its program is a wrapper; None when it runs nothing else."""
    name = words[0]
    if name is None:
        return None
    base = os.path.basename(name)
    special = _SHELL_LIKE.get(base) or SPECIAL.get(base)
    if special is not None:
        return special(words)
    options = WRAPPERS.get(base)
    if options is None:
        return None
    if base == "command" and any(w in ("-v", "-V") for w in words[1:2]):
        return None  # `command -v x` looks x up, runs nothing
    rest, line = _after_options(words[1:], options, numeric=base == "nice")
    if line is not None:
        return Inner(keep_wrapper=base in KEEP, script=line)
    if not rest:
        return None  # `sudo -v`, `nice`, `time`: nothing else runs
    if base == "xargs":
        rest = _replaced(rest, _replace_strings(words[1 : len(words) - len(rest)]))
    return Inner(words=rest, keep_wrapper=base in KEEP, open_end=base == "xargs")


def _replace_strings(options: tuple[Word, ...]) -> tuple[str, ...]:
    """What xargs replaces by an input line: `-I R`, `-i[R]`, `--replace[=R]` (`{}` by
    default)."""
    found: list[str] = []
    for i, word in enumerate(options):
        if word in ("-I", "-J") and i + 1 < len(options) and options[i + 1]:
            found.append(str(options[i + 1]))
        elif word and word.startswith(("-I", "-J")) and len(word) > 2:
            found.append(word[2:])
        elif word and (word.startswith("-i") or word.startswith("--replace")):
            glued = word[2:] if word.startswith("-i") else word.partition("=")[2]
            found.append(glued or "{}")
    return tuple(found)


def _replaced(words: tuple[Word, ...], marks: tuple[str, ...]) -> tuple[Word, ...]:
    """A word holding a replace string is known only at run time."""
    return tuple(None if w is None or any(m and m in w for m in marks) else w for w in words)


def _after_options(
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
        width = _option_width(word, options)
        if word.split("=", 1)[0] in options.line:
            line = _line_value(words, i, width)
        i += width
    i += options.leading
    if i > len(words):
        raise Unreadable
    if line is None and i < len(words) and words[i] in options.line:  # flock FILE -c 'line'
        line = _line_value(words, i, 2)
        return (), line
    return words[i:], line


def _line_value(words: tuple[Word, ...], i: int, width: int) -> str:
    word = words[i]
    value = words[i + 1] if width == 2 and i + 1 < len(words) else None
    if width == 1 and word is not None and "=" in word:
        value = word.split("=", 1)[1]
    if value is None:
        raise Unreadable
    return value


def _option_width(word: str, options: Options) -> int:
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


def _env(words: tuple[Word, ...]) -> Inner | None:
    i, assigns = 1, False
    while i < len(words):
        word = words[i]
        if word is None:
            raise Unreadable
        if word in ("-S", "--split-string") or word.startswith("--split-string="):
            raise Unreadable  # env -S 'cmd args' splits a string of its own
        if word.startswith("-"):
            i += 1 if word in ("--", "-") else _option_width(word, ENV_OPTIONS)
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
    rest, line = _after_options(words[1:], options)
    if line is not None:
        return Inner(keep_wrapper=True, script=line)
    if base == "runuser" and any(w in ("-u", "--user") for w in words[1:]):
        return Inner(words=rest, keep_wrapper=True) if rest else None
    rest = rest[1:]  # the user or group
    more, line = _after_options(rest, options) if rest else ((), None)
    if line is not None:
        return Inner(keep_wrapper=True, script=line)
    return Inner(keep_wrapper=True, script_unknown=True) if more else None


def _watch(words: tuple[Word, ...]) -> Inner | None:
    """`watch -n 1 'line'`: the rest, joined, goes to `sh -c` (or, with -x, runs itself)."""
    rest, _ = _after_options(words[1:], WATCH)
    if not rest:
        return None
    if any(w in ("-x", "--exec") for w in words[1:]):
        return Inner(words=rest)
    if any(w is None for w in rest):
        return Inner(script_unknown=True)
    return Inner(script=" ".join(str(w) for w in rest))


def _script(words: tuple[Word, ...]) -> Inner | None:
    """`script -c 'line' log`: only -c runs a command (else a shell, on the terminal)."""
    _, line = _after_options(words[1:], SCRIPT)
    return Inner(script=line) if line is not None else None


def _parallel(words: tuple[Word, ...]) -> Inner | None:
    """`parallel [options] cmd ::: args`: the command, with words that come at run time."""
    rest, _ = _after_options(words[1:], PARALLEL)
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


SPECIAL = {
    "su": _user_shell,
    "runuser": _user_shell,
    "sg": _user_shell,
    "watch": _watch,
    "script": _script,
    "parallel": _parallel,
    "firejail": _firejail,
}


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


_SHELL_LIKE = {
    "env": _env,
    "find": _find,
    "eval": _eval,
    ".": _source,
    "source": _source,
    "trap": _trap,
    "alias": _alias,
    **{shell: _shell for shell in SHELLS},
}
