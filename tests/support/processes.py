"""Looks at /proc: which processes run, in which group, under which parent, with which command
line. Zombies (exited, not yet reaped) count as gone everywhere."""

from __future__ import annotations

import os
from pathlib import Path


def stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (state is [0], ppid [1], pgrp [2]);
    None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode(errors="replace")
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()


def state(pid: int) -> str | None:
    """The process's state letter (Z for a zombie), None when it is gone."""
    fields = stat_fields(pid)
    return None if fields is None else fields[0]


def alive(pid: int | None) -> bool:
    """Whether the process runs (a zombie has exited)."""
    return pid is not None and state(pid) not in (None, "Z")


def all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [part.decode(errors="replace") for part in f.read().split(b"\0") if part]
    except OSError:
        return []


def group_members(pgid: int) -> list[int]:
    """Live processes of a process group."""
    members = []
    for pid in all_pids():
        fields = stat_fields(pid)
        if fields and fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(pid)
    return members


def children(pid: int) -> list[int]:
    """Live direct children of `pid`."""
    out = []
    for child in all_pids():
        fields = stat_fields(child)
        if fields and fields[0] != "Z" and int(fields[1]) == pid:
            out.append(child)
    return out


def descendants(pid: int | None = None) -> list[int]:
    """Live descendants of `pid` (this process by default)."""
    found: list[int] = []
    todo = [os.getpid() if pid is None else pid]
    while todo:
        for child in children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def running(*command: str, under: int | None = None) -> list[int]:
    """Live descendants of `under` (this process by default) whose command line is `command`:
    `running("sleep", "30")` once a tool's command reached its `sleep 30`."""
    return [pid for pid in descendants(under) if cmdline(pid) == list(command)]


LAUNCHER = "launcher_process.py"


def is_launcher(pid: int) -> bool:
    """Whether `pid` is one of mm's launcher processes (core/launcher_process.py)."""
    return any(a.endswith(LAUNCHER) for a in cmdline(pid))


def launchers(pid: int | None = None) -> list[int]:
    """The launcher processes `pid` (this process by default) started: the parents of the
    commands the tools run. A launcher in namespaces of its own is the child of the one `pid`
    started (which stays outside, its keeper): the child is given."""
    parent = os.getpid() if pid is None else pid
    found = []
    for child in children(parent):
        if is_launcher(child):
            inner = [c for c in children(child) if is_launcher(c)]
            found += inner or [child]
    return found


def tool_groups(pid: int | None = None) -> list[int]:
    """The process groups the bash tool started under `pid` (this process by default), through
    its launcher processes: each command runs in a session of its own, led by the shell, so a
    group's id is the shell's pid (after `bash -c` has exec'd its last command, the pid is that
    command's)."""
    groups = []
    for launcher in launchers(pid):
        for child in children(launcher):
            fields = stat_fields(child)
            if fields and int(fields[2]) == child:
                groups.append(child)
    return groups


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line holds `text` (an agent file's path)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in line and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def host_group(pgid: int) -> int:
    """A process group as a command numbered it (`$$` printed by the tool's shell), as this
    process numbers it. The same number, unless the launcher runs in a PID namespace of its
    own (as root), where it is found by the `NSpgid` line of a live member's
    /proc/<pid>/status among the processes of that namespace: the newest launcher's first.
    `pgid` unchanged when no live member is found."""
    for launcher in sorted(
        launchers(), key=lambda p: int((stat_fields(p) or [0] * 20)[19]), reverse=True
    ):
        try:
            namespace = os.readlink(f"/proc/{launcher}/ns/pid")
        except OSError:
            continue
        for pid in all_pids():
            try:
                if os.readlink(f"/proc/{pid}/ns/pid") != namespace or not alive(pid):
                    continue
            except OSError:
                continue
            numbers = namespace_numbers(pid, "NSpgid")
            if len(numbers) > 1 and numbers[-1] == pgid:
                return numbers[0]
    return pgid


def host_pid(pid: int, cwd: Path) -> int:
    """A command's own pid (`$$` printed by the tool's shell, working in `cwd`) as this process
    numbers it: the same, unless its launcher runs in a PID namespace of its own, where it is
    the live process of that number there (the last of its `NSpid` line) working in `cwd`.
    `pid` unchanged when none is found."""
    where = os.path.realpath(cwd)
    for candidate in all_pids():
        try:
            if os.readlink(f"/proc/{candidate}/cwd") != where:
                continue
        except OSError:
            continue
        numbers = namespace_numbers(candidate, "NSpid")
        if len(numbers) > 1 and numbers[-1] == pid and alive(candidate):
            return candidate
    return pid


def namespace_numbers(pid: int, field: str) -> list[int]:
    """A `field` of /proc/<pid>/status that numbers a process in each PID namespace it is in
    (`NSpid`, `NSpgid`): as this process sees it first, in the innermost last; [] when gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return []
    for line in status.splitlines():
        if line.startswith(f"{field}:"):
            return [int(n) for n in line.split()[1:]]
    return []


def mm_above(pid: int) -> int:
    """The mm process that `pid`, a command, runs for: its first ancestor that is not one of
    mm's launchers (nor a namespaced launcher's keeper)."""
    parent = int((stat_fields(pid) or ["", "0"])[1])
    while parent > 1 and is_launcher(parent):
        parent = int((stat_fields(parent) or ["", "0"])[1])
    return parent
