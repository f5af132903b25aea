"""The simple commands a bash line runs, read by a real shell parser (tree-sitter's bash
grammar), for the permission rules (`permission_rules.py`).

A line is a tree of lists, pipelines, subshells, loops, functions and substitutions; every
`command` node anywhere in it is one simple command the line may run, so `git status && rm -rf
x`, `echo "$(rm x)"`, `` `rm x` ``, `(cd a; rm x)` and `f() { rm x; }` all show `rm`. Programs
that run the rest of their words as a command (`sudo`, `env`, `timeout`, `nice`, `nohup`,
`xargs`, `find -exec`, `bash -c`, `eval`, ...) are unwrapped: the command they run is listed
too. `sudo` and `doas` are listed themselves besides (running as root is a rule's business);
the others are transparent.

What is not known before the line runs stays unknown: a word made of an expansion, a
substitution or an unquoted glob has the value `None` (`$CMD -rf /` runs some unknown
command), and `xargs` adds words nobody has seen yet (`open_end`). A command is also marked
`risky` when something around it can change what it does that its words do not show: output
sent to a file outside the project's folder, a prefix assignment of PATH, LD_* or the like,
`git -c`. The rules decide what each of these means (an allow rule never matches a risky or
unknown thing; a deny rule matches what it might be).

A line the grammar cannot read whole (an error node, a wrapper with options it does not know)
is `None`: it cannot be checked, so it is asked about."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from typing import Any

from mm_tui.core.frozen import frozen
from mm_tui.engine.shell_options import NESTING, SAFE_TARGETS, Unreadable, Word, risky_name
from mm_tui.engine.shell_wrappers import inner_command


@frozen
class SimpleCommand:
    words: tuple[Word, ...]  # the command's name first; never empty
    risky: bool = False
    open_end: bool = False  # more words will follow, nobody knows which (xargs)

    @property
    def name(self) -> Word:
        return self.words[0]


@functools.cache
def _parser() -> Any:
    """The grammar, loaded the first time a line is checked (a session without bash rules never
    loads it)."""
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def simple_commands(line: str) -> list[SimpleCommand] | None:
    """Every simple command `line` may run, wrappers unwrapped; None when it is not read whole."""
    try:
        return list(_commands(line, 0))
    except Unreadable:
        return None


def _commands(line: str, depth: int) -> Iterator[SimpleCommand]:
    if depth > NESTING:
        raise Unreadable
    tree = _parser().parse(line.encode("utf-8", "surrogateescape"))
    root = tree.root_node
    if root.has_error:
        raise Unreadable
    yield from _walk(root, False, depth)


def _walk(node: Any, writes: bool, depth: int) -> Iterator[SimpleCommand]:
    kind = node.type
    if kind == "redirected_statement":
        writes = writes or _writes_outside(node)
    elif kind == "variable_assignment" and node.parent is not None:
        if node.parent.type in ("program", "list", "compound_statement", "subshell"):
            yield from _assignment(node)  # `PATH=/tmp/x; git status` changes the next ones
    elif kind == "declaration_command":
        yield SimpleCommand(words=(_text(node.children[0]),), risky=True)
    elif kind == "command":
        yield from _command(node, writes, depth)
    for child in node.children:
        yield from _walk(child, writes, depth)


def _assignment(node: Any) -> Iterator[SimpleCommand]:
    name = node.child_by_field_name("name")
    if name is not None and risky_name(_text(name)):
        yield SimpleCommand(words=(None,), risky=True)


def _command(node: Any, writes: bool, depth: int) -> Iterator[SimpleCommand]:
    risky = writes
    words: list[Word] = []
    for child in node.children:
        kind = child.type
        if kind == "variable_assignment":
            name = child.child_by_field_name("name")
            risky = risky or name is None or risky_name(_text(name))
        elif kind == "file_redirect":
            risky = risky or _redirect_writes(child)
        elif kind == "command_name":
            words.append(word_value(child.children[0]) if child.children else None)
        elif kind not in ("herestring_redirect", "heredoc_redirect", "comment"):
            words.append(word_value(child))
    if not words:
        return
    yield from unwrap(tuple(words), risky, depth)


def unwrap(words: tuple[Word, ...], risky: bool, depth: int) -> Iterator[SimpleCommand]:
    """The command itself when it runs nothing else, else what it runs (and `sudo` itself)."""
    inner = inner_command(words)
    if inner is None:
        yield SimpleCommand(words=words, risky=risky or _git_risky(words))
        return
    if inner.keep_wrapper:
        yield SimpleCommand(words=words, risky=risky)
    if inner.script is not None:
        yield from _commands(inner.script, depth + 1)
        return
    if inner.script_unknown:
        yield SimpleCommand(words=(None,), risky=True)
        return
    if inner.words:
        for command in unwrap(inner.words, risky or inner.assigns, depth):
            yield command if not inner.open_end else _opened(command)


def _opened(command: SimpleCommand) -> SimpleCommand:
    return SimpleCommand(words=command.words, risky=command.risky, open_end=True)


def _git_risky(words: tuple[Word, ...]) -> bool:
    """`git -c core.pager=… log` runs a program of the line's choosing."""
    if not words or words[0] is None or os.path.basename(words[0]) != "git":
        return False
    return any(w is None or w == "-c" or (w.startswith("-c") and "=" in w) for w in words[1:3])


def _writes_outside(node: Any) -> bool:
    return any(child.type == "file_redirect" and _redirect_writes(child) for child in node.children)


def _redirect_writes(node: Any) -> bool:
    """An output redirection to a file that may lie outside the project's folder."""
    operator = next((c for c in node.children if c.type in (">", ">>", "&>", "&>>", ">|")), None)
    if operator is None:
        return False  # input, or a descriptor copied (`2>&1`)
    target = node.child_by_field_name("destination")
    value = word_value(target) if target is not None else None
    if value is None:
        return True
    if value in SAFE_TARGETS:
        return False
    return value.startswith(("/", "~")) or ".." in value.split("/")


def word_value(node: Any) -> Word:
    """A word's value as bash would pass it, or None when it depends on the run."""
    kind = node.type
    if kind in ("word", "number"):
        text = _text(node)
        if any(c in text for c in "*?[") or text.startswith("~"):
            return None  # a glob or a home folder: expanded by the shell
        if "{" in text and "}" in text:
            return None  # a brace expansion: `r{m,} x` is `rm r x`
        return _unescaped(text)
    if kind == "raw_string":
        return _text(node)[1:-1]
    if kind == "string":
        return _string_value(node)
    if kind == "concatenation":
        bare = "".join(_text(c) for c in node.children if c.type == "word")
        if "{" in bare and "}" in bare:
            return None  # a brace expansion split into parts: `r{m,}`
        parts = [word_value(child) for child in node.children]
        return None if any(p is None for p in parts) else "".join(p for p in parts if p)
    return None  # expansions, substitutions, $'…', arithmetic


def _string_value(node: Any) -> Word:
    out = []
    for child in node.children:
        if child.type == '"':
            continue
        if child.type != "string_content":
            return None
        out.append(_dequoted(_text(child)))
    return "".join(out)


def _unescaped(text: str) -> str:
    """An unquoted word's backslashes: `r\\m` is `rm`, `\\\\` a backslash."""
    if "\\" not in text:
        return text
    out, chars = [], iter(text)
    for char in chars:
        out.append(next(chars, "") if char == "\\" else char)
    return "".join(out)


def _dequoted(text: str) -> str:
    """Inside double quotes a backslash quotes only $ ` " \\ and a newline."""
    if "\\" not in text:
        return text
    out, i = [], 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text) and text[i + 1] in '$`"\\\n':
            out.append("" if text[i + 1] == "\n" else text[i + 1])
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "surrogateescape")
