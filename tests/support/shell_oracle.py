"""What a shell line really runs, seen by running it where nothing it runs can do anything.

The permission rules read a line with a parser and say which commands it may run; this runs the
line in real bash and records every program started, so a test can hold the rules to what bash
actually does (`tests/engine/test_permission_corpus.py`). Lines like `sudo rm -rf /` are run, so
everything here is about making sure nothing real can happen:

- Lines run in namespaces made for them (`unshare`): a mount namespace where a fresh tmpfs is
  /tmp and every other mount is read-only, an empty network namespace, a pid namespace that is
  killed whole when a line runs past its timeout. A worker runs its lines one after another in
  one set of namespaces, each line in a new empty folder.
- Every program name a line can reach is a stub: the stub folder is bound over /usr/bin,
  /usr/sbin, /usr/local/bin and /usr/local/sbin (so `/bin/rm` is the stub too, /bin being
  /usr/bin) and is the only folder on PATH; bash's `command_not_found_handle` (defined in the
  BASH_ENV file) logs any other name. A stub appends its argv, as one JSON line, to the log (fd 9)
  and succeeds. The programs that run others are real, so that what they run is seen: env,
  timeout, nice, nohup, xargs, stdbuf, find, bash, sh. `sudo` is a stub that logs itself, skips
  its options and runs the rest.
- The line runs with no capabilities, as uid/gid 65534 with no groups when the tests run as
  root, otherwise as the current user mapped to root in a user namespace of its own. Its folder,
  which is also HOME, is empty; its environment is PATH, HOME and BASH_ENV only; stdin is
  /dev/null.
- Before any line runs, the namespace checks itself: /usr/bin/rm must be the stub and / must be
  read-only, or the oracle refuses (`OracleRefused`).

The log is a pipe that `cat` copies out: a line's run ends when every process that could still
log has closed it, its end of file, not a guess of time.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

NOBODY = 65534
# Inside the namespace: the private tmpfs is /tmp; the real /usr/bin is bound at /tmp/real.
INNER_STUBS = "/tmp/stubs"
INNER_REAL = "/tmp/real"
INNER_HOME = "/tmp/home"
BIN_FOLDERS = ("/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin")
# Programs that run other programs: real, so that what they run is seen.
REAL = ("env", "timeout", "nice", "nohup", "xargs", "stdbuf", "find", "bash", "sh")
REFUSED = 97  # the setup's exit status when the namespace is not as it must be
# Names every line may reach besides the corpus's own words.
COMMON = (
    "awk basename cat chmod chown cp curl cut date dd diff dirname du echo false file git grep "
    "gzip head id kill ln ls make mkdir mktemp mv node npm perl printf ps pwd python python3 "
    "readlink realpath rm rmdir sed sleep sort ssh tail tar tee test touch tr true uname uniq "
    "wc wget which whoami yes"
).split()
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")

STUB = r"""#!/tmp/real/bash -p
# A stand-in for a program: logs its argv as one JSON line on fd 9 and succeeds.
_q() {
  local s=$1 c h i
  s=${s//\\/\\\\}; s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}; s=${s//$'\t'/\\t}; s=${s//$'\r'/\\r}
  if [[ $s == *[$'\x01'-$'\x1f']* ]]; then
    for ((i = 1; i < 32; i++)); do
      printf -v h '%02x' "$i"; printf -v c "\\x$h"
      s=${s//"$c"/\\u00$h}
    done
  fi
  _out+=,\"$s\"
}
_out=
_q "${MM_ORACLE_NAME:-${0##*/}}"
for _a in "$@"; do _q "$_a"; done
printf '[%s]\n' "${_out#,}" >&9 2>/dev/null
exit 0
"""

SUDO = r"""#!/tmp/real/bash -p
# sudo, not run for real: logged, its options and VAR=value words skipped, the rest run.
MM_ORACLE_NAME=sudo /tmp/stubs/.stub "$@"
while (($#)); do
  case $1 in
    --) shift; break ;;
    -u|-g|-C|-D|-h|-p|-r|-t|-U|-T|--user|--group|--close-from|--chdir|--host|--prompt|--role|--type|--other-user|--command-timeout)
      shift; (($#)) && shift ;;
    -*) shift ;;
    *) [[ $1 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] && shift || break ;;
  esac
done
(($#)) || exit 0
type -P -- "$1" >/dev/null || exec env MM_ORACLE_NAME="$1" /tmp/stubs/.stub "${@:2}"
exec "$@"
"""

BASH_ENV = """# Any name bash finds nowhere on PATH is logged as the stubs log theirs.
command_not_found_handle() { MM_ORACLE_NAME=$1 /tmp/stubs/.stub "${@:2}"; }
"""

# Run by the real bash as (namespace) root: $1 the host folder, $2 drop|stay. Reads lines, each
# ended by a NUL, from stdin; for each, writes what it logged and then END_OF_RUN to stdout.
SETUP = r"""
set -eu
B=$1 MODE=$2 T=$1/t M=/usr/bin/mount
exec 8>&1 1>/dev/null
$M -t tmpfs -o mode=1777,size=64m mm-oracle "$T"
/usr/bin/mkdir "$T/real" "$T/stubs"
$M -o bind,ro /usr/bin "$T/real"
$M -o bind,ro "$B/stubs" "$T/stubs"
$M --rbind "$T" /tmp
M=/tmp/real/mount
for d in /usr/bin /usr/sbin /usr/local/bin /usr/local/sbin; do
  if [ -d "$d" ]; then $M -o bind,ro /tmp/stubs "$d"; fi
done
while read -r _ _ _ _ mp _; do
  [[ $mp == *\\* ]] && mp=$(printf '%b' "${mp//\\/\\0}")
  case $mp in /tmp|/proc|/proc/*) continue ;; esac
  $M -o remount,bind,ro "$mp" 2>/dev/null || true
done < /proc/self/mountinfo
first=
{ read -r first < /usr/bin/rm; } 2>/dev/null || true
[ "$first" = "#!/tmp/real/bash -p" ] || { echo "refused: /usr/bin/rm is not the stub" >&2; exit 97; }
root_ro=no
while read -r _ _ _ _ mp opts _; do
  if [ "$mp" = / ]; then case ,$opts, in *,ro,*) root_ro=yes ;; *) root_ro=no ;; esac; fi
done < /proc/self/mountinfo
[ $root_ro = yes ] || { echo "refused: / is not read-only" >&2; exit 97; }
DROP=(/tmp/real/setpriv --inh-caps=-all --bounding-set=-all --no-new-privs)
[ "$MODE" = drop ] && DROP+=(--reuid=65534 --regid=65534 --clear-groups)
DROP+=(--)
n=0
while IFS= read -r -d '' LINE; do
  n=$((n + 1)) H=/tmp/home$n
  /tmp/real/mkdir "$H"
  [ "$MODE" = drop ] && /tmp/real/chown 65534:65534 "$H"
  cd "$H"
  # The log is a pipe that cat copies out: cat ends when every process that could still log
  # has closed it. The line's stderr goes there too (the reader keeps the JSON lines apart).
  exec 9> >(exec /tmp/real/cat >&8)
  LOG=$!
  ( exec "${DROP[@]}" /tmp/real/env -i PATH=/tmp/stubs HOME="$H" BASH_ENV=/tmp/stubs/.bash_env \
      /tmp/real/bash -c -- "$LINE" ) </dev/null 2>&9 8>&- &
  exec 9>&-
  wait "$LOG" || true
  printf '\0END_OF_RUN\n' >&8
done
"""
END_OF_RUN = b"\0END_OF_RUN\n"


class OracleRefused(RuntimeError):
    """The oracle would not run a line: its sandbox was not as it must be."""


@dataclass
class Run:
    """What one line ran: each program's argv (its name's basename first), in the order logged."""

    line: str
    argvs: list[list[str]] = field(default_factory=list)
    timed_out: bool = False
    stderr: str = ""


def missing() -> str | None:
    """Why the oracle cannot run here, or None."""
    for program in ("bash", "setpriv", "unshare"):
        if shutil.which(program) is None:
            return f"{program} (util-linux or bash) is missing: the shell oracle cannot run lines"
    return _namespaces_refused()


def _namespaces_refused() -> str | None:
    """Why this machine gives no namespaces to the oracle (a container without the rights),
    or None: asked once, by making them."""
    import subprocess

    probe = ["unshare", "--mount", "--pid", "--fork", "--net"]
    if os.geteuid() != 0:
        probe[1:1] = ["--user", "--map-root-user"]
    try:
        done = subprocess.run([*probe, "true"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare could not run ({exc}): the shell oracle needs namespaces"
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip()
        return f"this machine gives no namespaces ({why}): the shell oracle needs them"
    return None


def command_names(lines: Iterable[str]) -> set[str]:
    """Every word of the lines that could be a program's name, and the common ones."""
    names = set(COMMON)
    for line in lines:
        names.update(_NAME.findall(line))
    return {n for n in names if n not in (".", "..") and len(n) < 100}


def check_path(env: dict[str, str], stubs: str = INNER_STUBS) -> None:
    """Refuse an environment whose PATH is anything but the stub folder alone."""
    if env.get("PATH") != stubs:
        raise OracleRefused(f"PATH must be the stub folder {stubs} alone, not {env.get('PATH')!r}")


def runs_pattern(argv: list[str], pattern: str) -> bool:
    """Whether a program that ran is one a bash pattern names: its first word's basename equal,
    then word by word (a last `*` any number of words, none included; `*` elsewhere one word;
    globs within a word)."""
    words = shlex.split(pattern)
    rest = bool(words) and words[-1] == "*"
    fixed = words[:-1] if rest else words
    got = [os.path.basename(argv[0]), *argv[1:]] if argv else []
    if len(got) < len(fixed) or (not rest and len(got) != len(fixed)):
        return False
    return all(fnmatch.fnmatchcase(word, glob) for word, glob in zip(got, fixed, strict=False))


class ShellOracle:
    """Runs lines as described above; one stub folder for many runs. Use as a context manager."""

    def __init__(self, names: Iterable[str]) -> None:
        self.drop = os.geteuid() == 0
        self.base = Path(tempfile.mkdtemp(prefix="mm-oracle-"))
        (self.base / "t").mkdir()
        stubs = self.base / "stubs"
        stubs.mkdir(mode=0o755)
        _write_stubs(stubs, set(names))
        self.base.chmod(0o755)

    def __enter__(self) -> ShellOracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    def argv(self) -> list[str]:
        """The command that starts the namespaces the lines run in."""
        unshare = ["unshare", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc", "--net"]
        if not self.drop:
            unshare[1:1] = ["--user", "--map-root-user"]
        mode = "drop" if self.drop else "stay"
        return [*unshare, "/usr/bin/bash", "-c", SETUP, "setup", str(self.base), mode]

    def run(self, line: str, timeout: float = 10.0) -> Run:
        """Run `line` in namespaces of its own; the argvs of the programs it ran."""
        return self.run_all([line], timeout=timeout)[0]

    def run_all(self, lines: list[str], timeout: float = 10.0, workers: int = 1) -> list[Run]:
        """Run each line, `workers` namespaces side by side, one line after another in each (a
        line that times out takes its namespace with it: the next one starts a new one)."""
        check_path({"PATH": INNER_STUBS})
        results: list[Run | None] = [None] * len(lines)
        queue = iter(range(len(lines)))
        lock = threading.Lock()

        def work() -> None:
            batch: _Batch | None = None
            try:
                while True:
                    with lock:
                        index = next(queue, None)
                    if index is None:
                        return
                    batch = batch or _Batch(self.argv())
                    run = batch.run(lines[index], timeout)
                    results[index] = run
                    if run.timed_out:
                        batch = None
            finally:
                if batch is not None:
                    batch.close()

        with ThreadPoolExecutor(workers) as pool:
            for done in [pool.submit(work) for _ in range(workers)]:
                done.result()
        return [run for run in results if run is not None]


class _Batch:
    """One set of namespaces, fed lines on its stdin."""

    def __init__(self, argv: list[str]) -> None:
        self.errors = tempfile.TemporaryFile()
        self.child = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            env={"PATH": "/usr/bin:/bin"},
            start_new_session=True,
        )
        self.pending = b""

    def run(self, line: str, timeout: float) -> Run:
        assert self.child.stdin is not None and self.child.stdout is not None
        if "\0" in line:
            raise ValueError("a shell line holds no NUL: it ends a line on the oracle's stdin")
        try:
            self.child.stdin.write(line.encode("utf-8", "surrogateescape") + b"\0")
            self.child.stdin.flush()
        except BrokenPipeError:
            self._refused()
        out, ended = self._read_run(timeout)
        if ended == "eof":
            self._refused()
        if ended == "timeout":
            self.close()
        argvs, stderr = _parse_log(out)
        return Run(line, argvs, ended == "timeout", stderr)

    def _read_run(self, timeout: float) -> tuple[bytes, str]:
        """What the line logged, and how its run ended: "done", "timeout", or "eof" (the
        namespace is gone)."""
        fd = self.child.stdout.fileno()  # type: ignore[union-attr]
        deadline = time.monotonic() + timeout
        while END_OF_RUN not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return self.pending, "timeout"
            chunk = os.read(fd, 65536)
            if not chunk:
                return self.pending, "eof"
            self.pending += chunk
        out, _, self.pending = self.pending.partition(END_OF_RUN)
        return out, "done"

    def _refused(self) -> None:
        self.child.wait()
        self.errors.seek(0)
        message = self.errors.read().decode("utf-8", "replace").strip()
        if self.child.returncode == REFUSED:
            raise OracleRefused(message)
        raise RuntimeError(
            f"the shell oracle's namespace ended ({self.child.returncode}): {message}"
        )

    def close(self) -> None:
        with contextlib.suppress(BrokenPipeError):
            if self.child.stdin is not None:
                self.child.stdin.close()
        if self.child.poll() is None:
            _kill(self.child.pid)  # the session, pid namespace and all: lines stay in it
        self.child.wait()
        if self.child.stdout is not None:
            self.child.stdout.close()
        self.errors.close()


def _kill(session: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(session, signal.SIGKILL)


def _write_stubs(stubs: Path, names: set[str]) -> None:
    stub = stubs / ".stub"
    stub.write_text(STUB)
    stub.chmod(0o755)
    (stubs / ".bash_env").write_text(BASH_ENV)
    (stubs / "sudo").write_text(SUDO)
    (stubs / "sudo").chmod(0o755)
    for name in sorted(names - set(REAL) - {"sudo"}):
        os.link(stub, stubs / name)
    for name in REAL:
        (stubs / name).symlink_to(f"{INNER_REAL}/{name}")


def _parse_log(out: bytes) -> tuple[list[list[str]], str]:
    """The stubs' JSON lines, and the rest (the line's stderr)."""
    argvs: list[list[str]] = []
    other: list[str] = []
    for raw in out.splitlines():
        text = raw.decode("utf-8", "surrogateescape")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            argvs.append(value)
        else:
            other.append(text)
    return argvs, "\n".join(other)
