"""From what a model writes to positions in a file, and from a server's symbols to text.

A model rarely gives a clean identifier: it copies `Greet',` with the quote and the comma, writes
`person.Greet` for a method, or packs symbol, line, column and new name into one string
(`Greet 1 12 Hello`). `clean_symbol` and `split_rename` recover the identifier. Then the
identifier's occurrences in the file become candidate positions, code lines before comment lines
(a mention in a comment is the least likely to be what the model meant, and servers answer
nothing there), for the tool to try one after the other.
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass
from typing import Any

# An identifier as most languages spell one; `$` for JavaScript and PHP.
IDENT = re.compile(r"[\w$]+")
_NUMBER = re.compile(r"\d+")
_SEPARATORS = re.compile(r"::|->|\.|#")

_SLASH = {
    ".c", ".h", ".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++", ".m", ".mm",
    ".cs", ".go", ".rs", ".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts", ".java",
    ".kt", ".kts", ".swift", ".scala", ".dart", ".zig", ".php", ".groovy", ".proto", ".css",
    ".scss", ".less", ".vue", ".svelte", ".sol",
}  # fmt: skip
_HASH = {
    ".py", ".pyi", ".rb", ".sh", ".bash", ".zsh", ".pl", ".pm", ".r", ".jl", ".nim", ".ex",
    ".exs", ".yaml", ".yml", ".toml", ".cmake", ".mk", ".tcl", ".cr", ".php", ".ps1",
}  # fmt: skip
_DASH = {".sql", ".lua", ".hs", ".elm", ".ada", ".adb", ".ads"}
_SEMICOLON = {".lisp", ".el", ".clj", ".cljs", ".scm", ".rkt", ".asm", ".s", ".ini"}
_NO_SINGLE_QUOTE_STRINGS = {".rs", ".lisp", ".el", ".clj", ".cljs", ".scm", ".rkt", ".ml"}
_BACKTICK = {".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts", ".go", ".md"}

CODE, STRING, COMMENT = 0, 1, 2


@functools.lru_cache(maxsize=64)
def _lexer(suffix: str) -> re.Pattern[str]:
    """One pattern that matches the comments and strings of a language (roughly: enough to
    tell a mention in prose from a use in code); what it does not match is code."""
    comments: list[str] = []
    strings: list[str] = []
    known = suffix in _SLASH | _HASH | _DASH | _SEMICOLON
    if suffix in _SLASH or not known:
        comments += [r"//[^\n]*", r"/\*.*?(?:\*/|\Z)"]
    if suffix in _HASH or not known:
        comments.append(r"#[^\n]*")
    if suffix in _DASH:
        comments.append(r"--[^\n]*")
    if suffix in _SEMICOLON:
        comments.append(r";[^\n]*")
    if suffix in (".py", ".pyi"):
        strings += [r'"""(?:\\.|.)*?(?:"""|\Z)', r"'''(?:\\.|.)*?(?:'''|\Z)"]
    strings.append(r'"(?:\\.|[^"\\\n])*"?')
    if suffix not in _NO_SINGLE_QUOTE_STRINGS:
        strings.append(r"'(?:\\.|[^'\\\n])*'?")
    if suffix in _BACKTICK:
        strings.append(r"`(?:\\.|[^`\\])*`?")
    alternatives = [f"(?P<c{i}>{p})" for i, p in enumerate(comments)]
    alternatives += [f"(?P<s{i}>{p})" for i, p in enumerate(strings)]
    return re.compile("|".join(alternatives), re.DOTALL)


def classify(text: str, suffix: str) -> list[tuple[int, int, int]]:
    """(start, end, STRING or COMMENT) spans of `text`, in order; the gaps are code."""
    spans = []
    for match in _lexer(suffix.lower()).finditer(text):
        kind = COMMENT if (match.lastgroup or "").startswith("c") else STRING
        if match.end() > match.start():
            spans.append((match.start(), match.end(), kind))
    return spans


def clean_symbol(raw: str) -> str:
    """The identifier a model meant: quotes and punctuation around it cut off, a `receiver.`,
    `pkg.` or `Class::` prefix dropped; "" when nothing identifier-like is left."""
    text = raw.strip()
    words = IDENT.findall(text)
    if not words:
        return ""
    # cut whatever is not part of an identifier from both ends: `'Greet',` -> `Greet`
    start = IDENT.search(text)
    assert start is not None
    text = text[start.start() :]
    last = list(IDENT.finditer(text))[-1]
    text = text[: last.end()]
    # `person.Greet`, `fmt.Println`, `std::vector`, `obj->field`: the last part
    parts = [p for p in _SEPARATORS.split(text) if p]
    text = parts[-1] if parts else text
    # `greet()` or `greet(name` left something after the identifier: keep the identifier
    match = IDENT.match(text.strip())
    return match.group(0) if match else ""


def split_words(raw: str) -> list[str]:
    """The words of a several-word symbol, each cleaned; empty words dropped."""
    return [w for w in (clean_symbol(part) for part in raw.split()) if w]


def split_rename(raw: str) -> tuple[str, str, list[int]]:
    """`Greet 1 12 Hello` -> ("Greet", "Hello", [1, 12]): the first identifier is the symbol, the
    last the new name, and the numbers between, when there are any, a line and a column."""
    words = split_words(raw)
    names = [w for w in words if not _NUMBER.fullmatch(w)]
    numbers = [int(w) for w in words if _NUMBER.fullmatch(w)]
    if len(names) < 2:
        return (names[0] if names else ""), "", numbers
    return names[0], names[-1], numbers


def symbol_from_words(raw: str) -> str:
    """For the navigating actions: a several-word symbol (`func greet`, `Greet 1 12`) names its
    last identifier that is not a number."""
    if len(raw.split()) < 2:
        return clean_symbol(raw)
    names = [w for w in split_words(raw) if not _NUMBER.fullmatch(w)]
    return names[-1] if names else ""


@dataclass(frozen=True)
class Occurrence:
    line: int  # 0-based
    column: int  # 0-based, in characters
    where: int  # CODE, STRING or COMMENT


def occurrences(
    lines: list[str], symbol: str, suffix: str, only_line: int | None = None
) -> list[Occurrence]:
    """Every whole-word occurrence of `symbol`: those in code first, then those inside strings
    (`#include "greet.h"` is not where greet is used), then those in comments, each group in
    file order. `only_line` (0-based) restricts the search to one line."""
    if not symbol:
        return []
    text = "\n".join(lines)
    spans = classify(text, suffix)
    starts = [s[0] for s in spans]
    line_starts = [0]
    for line in lines[:-1]:
        line_starts.append(line_starts[-1] + len(line) + 1)
    pattern = re.compile(r"(?<![\w$])" + re.escape(symbol) + r"(?![\w$])")
    found: list[Occurrence] = []
    if only_line is not None:
        if not 0 <= only_line < len(lines):
            return []
        base = line_starts[only_line]
        matches = [base + m.start() for m in pattern.finditer(lines[only_line])]
    else:
        matches = [m.start() for m in pattern.finditer(text)]
    for offset in matches:
        where = CODE
        index = bisect.bisect_right(starts, offset) - 1
        if index >= 0 and spans[index][0] <= offset < spans[index][1]:
            where = spans[index][2]
        line = bisect.bisect_right(line_starts, offset) - 1
        found.append(Occurrence(line, offset - line_starts[line], where))
    found.sort(key=lambda o: o.where)  # stable: file order within each group
    return found


# --- symbols -------------------------------------------------------------------------------------

_KINDS = [
    "file", "module", "namespace", "package", "class", "method", "property", "field",
    "constructor", "enum", "interface", "function", "variable", "constant", "string", "number",
    "boolean", "array", "object", "key", "null", "enum member", "struct", "event", "operator",
    "type parameter",
]  # fmt: skip


def kind_name(kind: Any) -> str:
    """The protocol's SymbolKind number as a word."""
    if isinstance(kind, int) and 1 <= kind <= len(_KINDS):
        return _KINDS[kind - 1]
    return "symbol"


@dataclass
class SymbolNode:
    kind: str
    name: str
    detail: str
    line: int  # 1-based
    children: list[SymbolNode]
    start: tuple[int, int] = (0, 0)  # the whole range, 0-based, for nesting flat lists
    end: tuple[int, int] = (0, 0)
    container: str = ""

    def contains(self, other: SymbolNode) -> bool:
        return (
            self.start <= other.start
            and other.end <= self.end
            and (
                self.start,
                self.end,
            )
            != (other.start, other.end)
        )


def _pos(position: Any) -> tuple[int, int]:
    if not isinstance(position, dict):
        return (0, 0)
    return (int(position.get("line", 0)), int(position.get("character", 0)))


def _one_line(text: Any) -> str:
    return " ".join(str(text or "").split())


def symbol_tree(result: Any) -> list[SymbolNode]:
    """A server's documentSymbol answer as a tree, whether it sent DocumentSymbol trees or a
    flat SymbolInformation list (nested here by range, and by container name when given)."""
    if not isinstance(result, list):
        return []
    nodes: list[SymbolNode] = []
    flat: list[SymbolNode] = []
    for item in result:
        if not isinstance(item, dict):
            continue
        if "location" in item:  # SymbolInformation
            rng = (item.get("location") or {}).get("range") or {}
            start, end = _pos(rng.get("start")), _pos(rng.get("end"))
            flat.append(
                SymbolNode(
                    kind_name(item.get("kind")),
                    _one_line(item.get("name")),
                    _one_line(item.get("detail")),
                    start[0] + 1,
                    [],
                    start,
                    end,
                    _one_line(item.get("containerName")),
                )
            )
        else:
            nodes.append(_document_symbol(item))
    if flat:
        nodes.extend(_nest(flat))
    return nodes


def _document_symbol(item: dict[str, Any]) -> SymbolNode:
    rng = item.get("range") or {}
    where = item.get("selectionRange") or rng
    children = [_document_symbol(c) for c in item.get("children") or [] if isinstance(c, dict)]
    children.sort(key=lambda n: n.start)
    return SymbolNode(
        kind_name(item.get("kind")),
        _one_line(item.get("name")),
        _one_line(item.get("detail")),
        _pos(where.get("start"))[0] + 1,
        children,
        _pos(rng.get("start")),
        _pos(rng.get("end")),
    )


def _nest(flat: list[SymbolNode]) -> list[SymbolNode]:
    """Nest a flat list: a symbol goes under the innermost earlier symbol whose range holds it,
    preferring one whose name is its container name."""
    flat.sort(key=lambda n: (n.start, (-n.end[0], -n.end[1])))
    roots: list[SymbolNode] = []
    stack: list[SymbolNode] = []
    for node in flat:
        while stack and not stack[-1].contains(node):
            stack.pop()
        parent = None
        if stack:
            parent = stack[-1]
            if node.container:
                named = [s for s in stack if s.name == node.container]
                if named:
                    parent = named[-1]
        (parent.children if parent else roots).append(node)
        stack.append(node)
    return roots


def format_symbols(nodes: list[SymbolNode], depth: int = 0) -> list[str]:
    """`<kind> <name>  [<detail>]  line N`, children indented two spaces."""
    out: list[str] = []
    for node in sorted(nodes, key=lambda n: (n.line, n.start)):
        detail = f"  [{node.detail}]" if node.detail else ""
        out.append(f"{'  ' * depth}{node.kind} {node.name}{detail}  line {node.line}")
        out.extend(format_symbols(node.children, depth + 1))
    return out
