"""Programs that run another command given in their words, and how to find that command.

`sudo -u bob rm -rf x` runs `rm -rf x`; `timeout -s KILL 5 make` runs `make`; `find . -exec rm
{} ;` runs `rm {}`; `bash -c 'rm x'` and `eval rm x` run a line of their own. Each wrapper's
options are known here (those that take a value, and those that do not); an option not known
makes the command unreadable (`Unreadable`), since guessing where the inner command starts
would let a rule check the wrong words."""

from __future__ import annotations

import os

from mm_tui.engine.shell_options import Inner, Options, Word, after_options, opts
from mm_tui.engine.shell_special_wrappers import SPECIAL

WRAPPERS: dict[str, Options] = {
    "sudo": opts(
        "-u --user -g --group -h --host -p --prompt -C --close-from -D --chdir -r --role -t "
        "--type -U --other-user -T --command-timeout -R --chroot",
        "-E -H -n -S -b -k -K -A -P -s -i --preserve-env --set-home --non-interactive --stdin "
        "--background --reset-timestamp --askpass --preserve-groups --shell --login",
    ),
    "doas": opts("-u -C", "-n -s"),
    "timeout": opts(
        "-s --signal -k --kill-after", "--preserve-status --foreground -v --verbose", 1
    ),
    "nice": opts("-n --adjustment", ""),
    "ionice": opts("-c --class -n --classdata", "-t --ignore"),
    "nohup": opts("", ""),
    "setsid": opts("", "-c --ctty -f --fork -w --wait"),
    "stdbuf": opts("-i --input -o --output -e --error", ""),
    "time": opts("-f --format -o --output", "-p -a --append -v --verbose --portability"),
    "exec": opts("-a", "-c -l"),
    "builtin": opts("", ""),
    "command": opts("", "-p"),
    "busybox": opts("", ""),
    "pkexec": opts("--user", "--disable-internal-agent --keep-cwd"),
    "flock": opts(
        "-w --wait --timeout -E --conflict-exit-code",
        "-s --shared -x -e --exclusive -n --nb --nonblock -u --unlock -o --close -F --no-fork "
        "--verbose",
        1,
        "-c --command",
    ),
    "chroot": opts("--userspec --groups", "--skip-chdir", 1),
    "setpriv": opts(
        "--reuid --regid --ruid --rgid --euid --egid --groups --inh-caps --ambient-caps "
        "--bounding-set --securebits --pdeathsig --selinux-label --apparmor-profile "
        "--landlock-access --landlock-rule",
        "--clear-groups --keep-groups --init-groups --no-new-privs --reset-env -d --dump",
    ),
    "unshare": opts(
        "--propagation --setgroups -S --setuid -G --setgid --map-user --map-group -R --root -w "
        "--wd",
        "-m -u -i -n -p -U -C -T -f -r -c --mount --uts --ipc --net --pid --user --cgroup "
        "--time --fork --map-root-user --map-current-user --mount-proc --kill-child",
    ),
    "nsenter": opts(
        "-t --target -S --setuid -G --setgid -w --wd -r --root",
        "-a --all -m --mount -u --uts -i --ipc -n --net -p --pid -C --cgroup -U --user -T "
        "--time -F --no-fork --preserve-credentials",
    ),
    "strace": opts(
        "-e -o -p -s -u -E -a -b -I -O -P -S -X",
        "-f -ff -c -C -d -D -F -h -i -k -q -qq -r -t -tt -ttt -T -v -V -w -x -xx -y -yy -z -Z",
    ),
    "ltrace": opts("-e -o -p -s -u -a -n -l -L", "-f -c -C -d -h -i -r -S -t -tt -ttt -T -V -w"),
    "taskset": opts("", "-a --all-tasks -c --cpu-list", 1),
    "chrt": opts(
        "-T -P -D --sched-runtime --sched-period --sched-deadline",
        "-b -f -i -o -r -d -a -m -R -v --batch --fifo --idle --other --rr --deadline "
        "--all-tasks --max --reset-on-fork --verbose",
        1,
    ),
    "xargs": opts(
        "-a --arg-file -d --delimiter -E -I -J -R -S -L --max-lines -n --max-args -P "
        "--max-procs -s --max-chars --process-slot-var",
        "-0 --null -o --open-tty -p --interactive -r --no-run-if-empty -t --verbose -x --exit "
        "--show-limits -i --replace -e --eof -l",
    ),
    "coproc": opts("", ""),
}
KEEP = frozenset({"sudo", "doas", "pkexec", "su", "runuser", "sg", "chroot", "setpriv"})


def inner_command(words: tuple[Word, ...]) -> Inner | None:
    """What `words` runs when its program is a wrapper; None when it runs nothing else."""
    name = words[0]
    if name is None:
        return None
    base = os.path.basename(name)
    special = SPECIAL.get(base)
    if special is not None:
        return special(words)
    options = WRAPPERS.get(base)
    if options is None:
        return None
    if base == "command" and any(w in ("-v", "-V") for w in words[1:2]):
        return None  # `command -v x` looks x up, runs nothing
    rest, line = after_options(words[1:], options, numeric=base == "nice")
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
