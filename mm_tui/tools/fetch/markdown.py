"""HTML to Markdown: our own converter, walking selectolax's (Lexbor's) tree.

Why not a markdownify subclass: the goal is at least ten times markdownify's speed and at least
the speed of the Rust-backed html-to-markdown, and a subclass cannot get there. markdownify walks
a BeautifulSoup tree built by a pure-Python parser, and converts each node through several
method lookups and string copies: about 1 MB/s on bench/bench_fetch.py's 4 MB page, where
html-to-markdown does 10-16 MB/s. BeautifulSoup's parse alone is slower than the goal, and a
subclass keeps it. Lexbor (selectolax) parses the same page at 150-200 MB/s, and a bare Python
walk over every node of its tree costs about as much again, so the whole budget is in the walk;
this module keeps it lean:

- one pass, dispatching on Lexbor's integer tag ids through two tables (block, inline);
- a text node is tested for the characters to escape with `in`, at memchr speed, and only the
  few that hold one go through a regular expression;
- whitespace is collapsed once per paragraph (with `str.split` when the text is ASCII) rather
  than per text node, and strings are joined once per block;
- children are read with `first_child` and `next` (selectolax's `iter` is a generator, dearer
  per child), and an element whose only child is a text returns it without a list to join;
- one query per table answers its nesting, headings and spans; the usual pre needs none;
- the elements removed for their tag (clean.py) are skipped here at no cost.

The figures, and what was tried that did not help: docs/performance.md, "fetch_content".

The walk has two modes. Block mode (`_flow`) goes through a container's children, gathers inline
content into the current paragraph, and closes the paragraph at each block element. Inline mode
(`_inline`) returns a string; when it meets a block element where none may be, it raises
`_HasBlock` and the element that was being converted as inline is converted again as a container
("an unknown element that contains a block element is treated as a container"; the same goes for
a link or emphasis around blocks, since Markdown has no block inside a link). Headings and table
cells flatten instead: a block inside them becomes a line break.

Inside inline content a line break (`<br>`, or a block boundary when flattening) is carried as
NUL, a character the HTML parser never leaves in text, until the paragraph is finished: only then
is whitespace collapsed, which would otherwise swallow a newline. Two more marks wait for the
paragraph's end the same way, as lone surrogates (the parser only gives valid Unicode): the edges
of emphasis whose delimiters touch punctuation on the inside (`_settle`), and the spaces of a
`pre` flattened into a cell. A paragraph is tested for them only when it is not ASCII, a flag
CPython keeps on every string.

Choices where the reference (docs/tools.md) is silent:

- HTML's block-level elements (`div`, `section`, `dl`, `dd`, `figure`, `details`…) are containers:
  each one closes a paragraph. "Unknown element" means the rest (`span`, `label`, `abbr`, custom
  elements…): tags dropped, text kept;
- a link with no text whose href is only a fragment (`#section`: a heading's permalink whose icon
  was removed) is an empty element: nothing. Any other link with no text is written `<url>`;
- within a list item, a nested list follows the item's text on the next line (a tight list);
  items are separated by a single newline; an empty item is dropped;
- a list item "starts with a checkbox" when the checkbox is its first content, possibly inside
  its first element (`<li><label><input type=checkbox> …`);
- emphasis: the whitespace at its edges goes outside the delimiters, Unicode's too (`&nbsp;`,
  U+3000), as CommonMark reads no delimiter beside whitespace on its inner side. A delimiter with
  punctuation on its inner side opens or closes only with whitespace or punctuation outside: when
  the outside is a letter or a digit (`a<b>"quoted"</b>b`, `これは<b>「重要」</b>です`), or another
  delimiter, the pair is written as the HTML tags `<strong>`, `<em>`, `<del>` (CommonMark keeps
  inline HTML), the content inside still Markdown;
- in a heading or a table cell, consecutive line breaks count as one;
- a `pre` in a table cell (or a heading) is a code span per line, its spacing kept, the lines
  joined by `<br>` as docs/tools.md writes any line break in a cell (a blank line goes with the
  rest): a cell cannot hold a fenced block, and code joined into one line would change meaning
  (`// a comment` would swallow the next lines). The table stays a GFM table;
- a layout table is a container, not a table: one that says so (`role="presentation"` or
  `"none"`), that has a single cell, whose cells hold a heading, whose only row holds blocks
  (columns of a page), or that holds another table beside paragraphs, lists, quotes or code (a
  page laid out in nested tables). This is tested before docs/tools.md's rule for spans and
  nested tables (the `tables` argument), which then applies to data tables;
- in a table kept as HTML, text is whitespace-collapsed, a `pre`'s newlines are written `&#10;`
  so that the block holds no blank line (which would end it), and rows go one per line;
- `rowspan="0"` spans to the end of the table; spans are capped at the table's size.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from html import escape as html_escape
from urllib.parse import urljoin, urlsplit

from selectolax.lexbor import LexborDocumentOptions, LexborHTMLParser, LexborNode

from mm_tui.tools.fetch.clean import (
    ALLOWED_ATTRIBUTES,
    BLOCKS,
    CONTAINERS,
    REMOVED_TAGS,
    clean,
    code_language,
    language_words,
)

# _TYPED: selectolax's stubs make `tag` and `text_content` Optional on every node, where the
# parser gives every element a tag and every text node its text. The hot loops below read them
# as str with a checker comment rather than pay for a check the parser already guarantees.


@dataclass(frozen=True)
class Options:
    base_url: str = ""
    tables: str = "html"  # "html" or "flatten", for tables with spans or nesting
    strikethrough: bool = False
    task_list: bool = False


class _HasBlock(Exception):  # noqa: N818 - a signal within the walk
    """An element converted as inline holds a block element: convert it as a container."""


_VOID = frozenset("area br col embed hr img input source track wbr".split())
_TABLE_STRUCTURE = frozenset("table thead tbody tfoot tr colgroup".split())
_NEWLINE_AFTER_OPEN = frozenset("table thead tbody tfoot".split())
_NEWLINE_AFTER_CLOSE = frozenset("tr caption thead tbody tfoot colgroup".split())

_FACTORY = LexborHTMLParser("")


def _tag_ids(names: frozenset[str] | tuple[str, ...]) -> dict[str, int]:
    return {name: _FACTORY.create_node(name).tag_id for name in names}


def _node_ids() -> tuple[int, int]:
    sample = LexborHTMLParser("<!DOCTYPE html><p>text<!-- comment --></p>")
    paragraph = sample.css_first("p")
    assert paragraph is not None and paragraph.child is not None and sample.root is not None
    text, comment = (child.tag_id for child in paragraph.iter(include_text=True))
    doctype = sample.root.prev
    return text, max(text, comment, doctype.tag_id if doctype is not None else 0) + 1


# The walk dispatches on Lexbor's tag ids: reading an id is cheaper than decoding a tag's name,
# which counts at a hundred thousand nodes. Lexbor numbers text, comments and doctypes first,
# then the elements.
TEXT_ID, _FIRST_ELEMENT_ID = _node_ids()
_BLOCK_IDS = frozenset(_tag_ids(BLOCKS).values())
_TABLE_STRUCTURE_IDS = frozenset(_tag_ids(_TABLE_STRUCTURE).values())
_TAG_IDS = _tag_ids(
    BLOCKS
    | REMOVED_TAGS
    | frozenset(
        "input wbr source track area col strong b em i code kbd samp tt del s strike a img br".split()
    )
)
"""Name to id, computed once here: the ids are Lexbor's constants, and the converters built in
worker threads then share nothing mutable."""
_LI_ID = _TAG_IDS["li"]
_PRE_ID = _TAG_IDS["pre"]
_CODE_ID = _TAG_IDS["code"]
_CELL_IDS = frozenset((_TAG_IDS["td"], _TAG_IDS["th"]))
_STRONG_IDS = frozenset((_TAG_IDS["strong"], _TAG_IDS["b"]))
_EM_IDS = frozenset((_TAG_IDS["em"], _TAG_IDS["i"]))
_STRIKE_IDS = frozenset((_TAG_IDS["del"], _TAG_IDS["s"], _TAG_IDS["strike"]))

BREAK = "\x00"
_UNICODE_SPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
"""Every character `str.isspace` accepts: CommonMark's Unicode whitespace and a few controls."""
_EDGE = _UNICODE_SPACE + BREAK  # what surrounds inline content without being part of it

# Emphasis whose delimiter touches punctuation (`**"quoted"**`) is emphasis or literal asterisks
# depending on the character outside it, which is not known when the element is converted. Such
# a pair is written between sentinels, and settled when its paragraph is finished (`_settle`).
# The sentinels are lone surrogates: text from the parser is valid Unicode and never holds one.
_OPEN = ("\ud800", "\ud802", "\ud804")  # strong, em, strike
_CLOSE = ("\ud801", "\ud803", "\ud805")
_MARKS = ("**", "*", "~~")
_HTML_TAGS = (("<strong>", "</strong>"), ("<em>", "</em>"), ("<del>", "</del>"))
_SENTINELS = re.compile("[\ud800-\ud805]")
_PRIVATE = "\ud800\ud801\ud802\ud803\ud804\ud805\ud806\ud807"
# In a pre flattened into a cell or a heading, the spaces and tabs of a line are these until the
# cell is finished, so that collapsing the cell's whitespace leaves the code's alone.
_KEPT_SPACE = "\ud806"
_KEPT_TAB = "\ud807"
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_WS = re.compile(r"[ \t\n\r\f]+")
_COLLAPSE = re.compile(r"[\t\n\r\f][ \t\n\r\f]*| [ \t\n\r\f]+")  # all but a lone space
_NEEDS_ESCAPE = re.compile(r"[\\*`\[\]<_]").search
_ESCAPE = re.compile(r"[\\*`\[\]<_]")
_BREAKS = re.compile(r" ?\x00[ \x00]*")
_LINE_START = re.compile(r"^(?:([#>+=|-])|(\d+)\.)", re.MULTILINE)
_LINE_START_CHARS = frozenset("#>+=|-")
_ORDERED = re.compile(r"\d+\. ")
_BACKTICKS = re.compile(r"`+")
_INDENT = re.compile(r"\n(?=[^\n])")
_URL_UNSAFE = re.compile(r"[\s<>]")


def _escape_one(match: re.Match[str]) -> str:
    char = match.group()
    if char == "_":  # left alone inside a word (snake_case); a lookaround expression is slower
        text = match.string
        at = match.start()
        if 0 < at < len(text) - 1 and text[at - 1].isalnum() and text[at + 1].isalnum():
            return "_"
    return "\\" + char


def _escape(text: str) -> str:
    return _ESCAPE.sub(_escape_one, text)


def _text(raw: str) -> str:
    """Text from an attribute (an image's alt): collapsed and escaped at once."""
    text = _WS.sub(" ", raw).strip(" ")
    return _escape(text) if _NEEDS_ESCAPE(text) is not None else text


def _several_breaks(match: re.Match[str]) -> str:
    return "\n" * match.group().count(BREAK)


def _finish(text: str, flat: bool) -> str:
    """Inline content made final: whitespace collapsed as a browser does, line breaks turned into
    newlines without the spaces around them (a run of them into one when `flat`), edges trimmed."""
    # `in` runs at memchr speed where a regular expression search crawls: test first.
    if "\n" in text or "  " in text or "\t" in text or "\r" in text or "\f" in text:
        # The edges go anyway. str.split also splits at the rare \v and \x1c-\x1f: collapsing
        # those too is no loss, and split is twice as fast as the expression.
        text = " ".join(text.split()) if text.isascii() else _COLLAPSE.sub(" ", text)
    if BREAK in text:
        text = _BREAKS.sub("\n" if flat else _several_breaks, text)
    text = text.strip(" \n")
    if text.isascii():
        return text
    if _KEPT_SPACE in text:
        text = text.replace(_KEPT_SPACE, " ").replace(_KEPT_TAB, "\t")
    return _settle(text) if _fragile(text) else text


def _line_start(match: re.Match[str]) -> str:
    if match.group(1):
        return "\\" + match.group(1)
    return match.group(2) + "\\."


def _paragraph_lines(text: str) -> str:
    """A finished paragraph's line starts escaped and its line breaks written `\\`."""
    if "\n" in text:
        return _LINE_START.sub(_line_start, text).replace("\n", "\\\n")
    first = text[0]
    if first in _LINE_START_CHARS or first.isdigit():
        return _LINE_START.sub(_line_start, text)
    return text


def _around(inner: str, core: str, middle: str) -> str:
    """`middle` in place of `core`, keeping the whitespace `inner` had around it."""
    start = inner.index(core[0])
    return inner[:start] + middle + inner[start + len(core) :]


def _punct(char: str) -> bool:
    """CommonMark's punctuation (Unicode P and S categories), or a sentinel (which stands for a
    delimiter or a tag: punctuation either way)."""
    if char < "\x80":
        return char in _ASCII_PUNCT
    return "\ud800" <= char <= "\ud805" or unicodedata.category(char)[0] in "PS"


def _wrap(inner: str, kind: int) -> str:
    """`**…**` around inline content (`kind` indexes `_MARKS`); edge whitespace, Unicode's
    included, goes outside, where Markdown needs it. A delimiter touching punctuation on the
    inside makes the pair fragile: sentinels around it let `_settle` look at the outside."""
    core = inner.strip(_EDGE)
    if not core:
        return inner  # empty: nothing; only whitespace or breaks: those
    mark = _MARKS[kind]
    if len(core) == len(inner):  # the usual case, tested inline: this runs once per emphasis
        first = core[0]
        last = core[-1]
        if (
            first in _ASCII_PUNCT
            or last in _ASCII_PUNCT
            or (first >= "\x80" and _punct(first))
            or (last >= "\x80" and _punct(last))
        ):
            return _OPEN[kind] + mark + core + mark + _CLOSE[kind]
        return mark + core + mark
    start = inner.index(core[0])
    end = start + len(core)
    if (start == 0 and _punct(core[0])) or (end == len(inner) and _punct(core[-1])):
        core = _OPEN[kind] + mark + core + mark + _CLOSE[kind]
    else:
        core = mark + core + mark
    return inner[:start] + core + inner[end:]


def _opens_or_closes(text: str, at: int, step: int, delimiter: str) -> bool:
    """Whether a delimiter whose inner side is punctuation still opens (step -1) or closes (step
    1) given what lies outside it, from `at` on: CommonMark asks for whitespace or punctuation
    there, or the edge of the text. Sentinels are skipped, and so are the delimiter characters
    beside it (`***"x"***` is one run: what counts is beyond the run)."""
    while 0 <= at < len(text) and (text[at] == delimiter or "\ud800" <= text[at] <= "\ud805"):
        at += step
    if not 0 <= at < len(text):
        return True
    char = text[at]
    return char.isspace() or _punct(char)


def _settle(text: str) -> str:
    """A finished paragraph's fragile emphasis made final: Markdown delimiters where CommonMark
    reads them as emphasis, else the HTML tags (`a<strong>"quoted"</strong>b`)."""
    found = [(m.start(), ord(m.group()) - 0xD800) for m in _SENTINELS.finditer(text)]
    opened: tuple[list[int], list[int], list[int]] = ([], [], [])  # per kind, innermost last
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement) in the text
    for pos, code in found:
        kind, closing = divmod(code, 2)
        if not closing:
            opened[kind].append(pos)
            continue
        if not opened[kind]:
            continue
        start = opened[kind].pop()
        mark = _MARKS[kind]
        width = len(mark)
        ok = True
        if _punct(text[start + 1 + width]):
            ok = _opens_or_closes(text, start - 1, -1, mark[0])
        if ok and _punct(text[pos - width - 1]):
            ok = _opens_or_closes(text, pos + 1, 1, mark[0])
        if ok:
            edits.append((start, start + 1, ""))
            edits.append((pos, pos + 1, ""))
        else:
            edits.append((start, start + 1 + width, _HTML_TAGS[kind][0]))
            edits.append((pos - width, pos + 1, _HTML_TAGS[kind][1]))
    edits.sort()
    out: list[str] = []
    at = 0
    for start, end, replacement in edits:
        out.append(text[at:start])
        out.append(replacement)
        at = end
    out.append(text[at:])
    return _SENTINELS.sub("", "".join(out))  # an unpaired sentinel, should one ever be left


def _fragile(text: str) -> bool:
    # isascii is a flag lookup; `in` on a narrower string returns at once.
    return not text.isascii() and ("\ud800" in text or "\ud802" in text or "\ud804" in text)


def _code_span(raw: str) -> str:
    # Only a run of whitespace changes: most spans (`name()`) have none.
    if "\n" in raw or "  " in raw or "\t" in raw or "\r" in raw or "\f" in raw:
        text = _WS.sub(" ", raw)
    else:
        text = raw
    core = text.strip(" ")
    if not core:
        return " " if text else ""
    fence = "`"
    if "`" in core:
        fence = "`" * (max(len(run) for run in _BACKTICKS.findall(core)) + 1)
        if core[0] == "`" or core[-1] == "`":
            core = f" {core} "
    span = fence + core + fence
    if len(text) == len(core):
        return span
    return (" " if text[0] == " " else "") + span + (" " if text[-1] == " " else "")


def _safe_url(url: str) -> str:
    """A link destination CommonMark reads back whole: no whitespace or angle brackets, and
    parentheses only when balanced."""
    # Every whitespace character but the space is unprintable: the usual URL is known safe
    # without the expression.
    suspect = not url.isprintable() or " " in url or "<" in url or ">" in url
    if suspect and _URL_UNSAFE.search(url) is not None:
        url = _URL_UNSAFE.sub(lambda m: f"%{ord(m.group()):02X}", url)
    if "(" in url or ")" in url:
        depth = 0
        for ch in url:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth < 0:
                    break
        if depth != 0:
            url = url.replace("(", "%28").replace(")", "%29")
    return url


def _int_attr(value: str | None, default: int, low: int, high: int) -> int:
    try:
        number = int((value or "").strip())
    except ValueError:
        return default
    return min(max(number, low), high)


def _is_list(block: str) -> bool:
    """Whether a rendered block is a list: only a list starts with `- ` or `N. `, since a
    paragraph starting so has been escaped (`\\-`, `1\\.`)."""
    return block.startswith("- ") or (block[0].isdigit() and _ORDERED.match(block) is not None)


class _Converter:
    def __init__(self, options: Options) -> None:
        self.base = options.base_url
        parts = urlsplit(self.base) if self.base else None
        self.scheme = parts.scheme if parts else ""
        self.origin = f"{parts.scheme}://{parts.netloc}" if parts and parts.netloc else ""
        self.base_no_fragment = self.base.split("#", 1)[0]
        self.tables_as_html = options.tables != "flatten"
        self.strikethrough = options.strikethrough
        self.task_list = options.task_list
        self.flatten = 0  # > 0 inside headings and table cells: a block becomes a line break
        self.inside = [0, 0, 0]  # depth in strong, em, strike (`_MARKS`' order)
        self.merged: set[int] = set()  # emphasis elements written with the one before them
        self._urls: dict[str, str] = {}
        self.block_handlers: dict[str, Callable[[LexborNode, list[str]], None]] = dict.fromkeys(
            CONTAINERS, self._flow
        )
        self.block_handlers.update(
            dict.fromkeys(("h1", "h2", "h3", "h4", "h5", "h6"), self._heading)
        )
        self.block_handlers.update(dict.fromkeys(("ul", "ol", "menu"), self._list))
        self.block_handlers.update(
            pre=self._pre, hr=self._hr, blockquote=self._blockquote, table=self._table
        )
        # The elements docs/tools.md removes for their tag are skipped here, as inline elements
        # so that a script between two words does not split a paragraph.
        self.inline_handlers: dict[str, Callable[[LexborNode], str]] = dict.fromkeys(
            REMOVED_TAGS | {"input", "wbr", "source", "track", "area", "col"}, self._nothing
        )
        # partial: the handler is called straight, without a method of its own in between; its
        # arguments are positional (the node last), as keywords would make a dict at each call.
        strong = partial(self._emphasis, 0, _STRONG_IDS)
        self.inline_handlers.update(dict.fromkeys(("strong", "b"), strong))
        self.inline_handlers.update(dict.fromkeys(("em", "i"), partial(self._emphasis, 1, _EM_IDS)))
        self.inline_handlers.update(dict.fromkeys(("code", "kbd", "samp", "tt"), self._code))
        self.inline_handlers.update(dict.fromkeys(("del", "s", "strike"), self._strike))
        self.inline_handlers.update(a=self._link, img=self._image, br=self._br)
        self.block_by_id = {_TAG_IDS[name]: h for name, h in self.block_handlers.items()}
        self.inline_by_id = {_TAG_IDS[name]: h for name, h in self.inline_handlers.items()}
        self._inline_get = self.inline_by_id.get
        self._block_get = self.block_by_id.get

    def render(self, root: LexborNode) -> str:
        blocks: list[str] = []
        self._flow(root, blocks)
        return "\n\n".join(blocks)

    # --- block mode -----------------------------------------------------------------------

    def _flow(self, node: LexborNode, blocks: list[str]) -> None:
        """A container's children: inline runs become paragraphs, block children their blocks."""
        run: list[str] = []
        inline_get = self._inline_get
        block_get = self._block_get
        inline = self._inline
        child = node.first_child
        while child is not None:
            tag = child.tag_id
            if tag == TEXT_ID:
                text: str = child.text_content  # pyright: ignore[reportAssignmentType] - see _TYPED
                if not run and text.isspace():
                    pass  # the indentation before a first word: most text nodes of a real page
                elif (
                    "_" in text
                    or "*" in text
                    or "[" in text
                    or "]" in text
                    or "`" in text
                    or "<" in text
                    or "\\" in text
                ):
                    run.append(_escape(text))
                else:
                    run.append(text)
            elif tag >= _FIRST_ELEMENT_ID:  # comments and doctypes say nothing
                handler = block_get(tag)
                if handler is not None:
                    if run:
                        self._paragraph(run, blocks)
                        run = []
                    try:
                        handler(child, blocks)
                    except RecursionError:
                        self._paragraph([_plain(child)], blocks)
                else:
                    try:
                        run.append(inline_get(tag, inline)(child))
                    except _HasBlock:
                        if run:
                            self._paragraph(run, blocks)
                            run = []
                        self._flow(child, blocks)
                    except RecursionError:
                        run.append(_plain(child))
            child = child.next
        if run:
            self._paragraph(run, blocks)

    def _paragraph(self, run: list[str], blocks: list[str]) -> None:
        """`_finish` and `_paragraph_lines` in one: this runs once per paragraph and list item."""
        text = run[0] if len(run) == 1 else "".join(run)
        if "\n" in text or "  " in text or "\t" in text or "\r" in text or "\f" in text:
            text = " ".join(text.split()) if text.isascii() else _COLLAPSE.sub(" ", text)
        if BREAK in text:
            text = _BREAKS.sub(_several_breaks, text).strip(" \n")
            if text:
                if not text.isascii() and _fragile(text):
                    text = _settle(text)
                blocks.append(_LINE_START.sub(_line_start, text).replace("\n", "\\\n"))
            return
        text = text.strip(" ")
        if text:
            # `_fragile`, inlined: `isascii` is a flag, and this runs once per paragraph.
            if not text.isascii() and ("\ud800" in text or "\ud802" in text or "\ud804" in text):
                text = _settle(text)
            first = text[0]
            if first in _LINE_START_CHARS or first.isdigit():
                text = _LINE_START.sub(_line_start, text)
            blocks.append(text)

    def _flow_one(self, node: LexborNode, blocks: list[str]) -> None:
        """One node as if it were a container's only child."""
        tag: str = node.tag  # pyright: ignore[reportAssignmentType] - see _TYPED
        if tag == "-text":
            text: str = node.text_content  # pyright: ignore[reportAssignmentType] - see _TYPED
            self._paragraph([_escape(text) if _NEEDS_ESCAPE(text) else text], blocks)
            return
        handler = self.block_handlers.get(tag)
        if handler is not None:
            handler(node, blocks)
            return
        try:
            self._paragraph([self.inline_handlers.get(tag, self._inline)(node)], blocks)
        except _HasBlock:
            self._flow(node, blocks)

    def _flat(self, node: LexborNode) -> str:
        """The inline content of a heading, a cell or a caption, where a block is a line break."""
        self.flatten += 1
        try:
            text = self._inline(node)
        finally:
            self.flatten -= 1
        return _finish(text, True)

    def _heading(self, node: LexborNode, blocks: list[str]) -> None:
        text = self._flat(node)
        if text:
            level = int(node.tag[1])  # pyright: ignore[reportOptionalSubscript] - see _TYPED
            blocks.append("#" * level + " " + text.replace("\n", " "))

    def _hr(self, node: LexborNode, blocks: list[str]) -> None:
        blocks.append("---")

    def _pre(self, node: LexborNode, blocks: list[str]) -> None:
        code, lang = _pre_code(node)
        if not code:
            return
        fence = "```"
        if "```" in code:  # a shorter run of backticks needs no longer fence
            fence = "`" * max(3, max(len(run) for run in _BACKTICKS.findall(code)) + 1)
        blocks.append(f"{fence}{lang}\n{code}\n{fence}")

    def _blockquote(self, node: LexborNode, blocks: list[str]) -> None:
        inner: list[str] = []
        self._flow(node, inner)
        if inner:
            body = "\n\n".join(inner)
            blocks.append("\n".join("> " + line if line else ">" for line in body.split("\n")))

    def _list(self, node: LexborNode, blocks: list[str]) -> None:
        ordered = node.tag == "ol"
        # `attributes`, a dict: selectolax's `attrs.get` raises and catches for a missing name.
        start = node.attributes.get("start") if ordered else None
        number = _int_attr(start, 1, 0, 999_999_999) if ordered else 0
        items: list[str] = []
        flow = self._flow
        task_list = self.task_list
        child = node.first_child
        while child is not None:
            tag = child.tag_id
            parts: list[str] = []
            if tag == _LI_ID:
                flow(child, parts)
            elif tag == TEXT_ID:
                if not child.text_content.isspace():  # pyright: ignore[reportOptionalMemberAccess]
                    self._flow_one(child, parts)
            elif tag >= _FIRST_ELEMENT_ID:  # an element straight inside the list: an item
                self._flow_one(child, parts)
            if parts:
                body = parts[0]
                if len(parts) > 1:
                    for part in parts[1:]:
                        body += ("\n" if _is_list(part) else "\n\n") + part
                if task_list and tag == _LI_ID:
                    box = _leading_checkbox(child)
                    if box is not None:
                        body = ("[x] " if box else "[ ] ") + body
                if ordered:
                    marker = f"{number}. "
                    number += 1
                else:
                    marker = "- "
                if "\n" in body:  # continuation lines indented by the marker's width
                    indent = "\n" + " " * len(marker)
                    if "\n\n" in body:
                        body = _INDENT.sub(indent, body)  # a blank line stays empty
                    else:
                        body = body.replace("\n", indent)
                items.append(marker + body)
            child = child.next
        if items:
            blocks.append("\n".join(items))

    # --- tables ---------------------------------------------------------------------------

    def _table(self, node: LexborNode, blocks: list[str]) -> None:
        content = node.text()
        if (not content or content.isspace()) and node.css_first("img") is None:
            return  # an empty element, whichever form it would take
        rows: list[list[LexborNode]] = []
        caption: LexborNode | None = None
        for part in node.iter():
            tag = part.tag
            if tag == "tr":
                rows.append(_cells(part))
            elif tag in ("thead", "tbody", "tfoot"):
                rows.extend(_cells(tr) for tr in part.iter() if tr.tag == "tr")
            elif tag == "caption" and caption is None:
                caption = part
        rows = [row for row in rows if row]
        # One query for the three: each query walks the table. Lexbor's scoped query includes
        # the node itself, hence `> 1`.
        found = node.css(_TABLES_HEADINGS_SPANS)
        tags = [inner.tag for inner in found]
        nested = tags.count("table") > 1
        if _layout(node, rows, nested, not _HEADINGS.isdisjoint(tags)):
            self._flow(node, blocks)  # its rows and cells are containers
            return
        spanned = any(
            _int_attr(value, 1, 0, 65534) != 1
            for attrs in (cell.attributes for cell in found)
            for value in (attrs.get("colspan"), attrs.get("rowspan"))
            if value is not None
        )
        if (spanned or nested) and self.tables_as_html:
            out: list[str] = []
            self._html(node, out, False)
            blocks.append("".join(out).strip("\n"))
            return
        grid = self._grid(rows) if spanned or nested else [[self._cell(c) for c in r] for r in rows]
        if caption is not None:
            text = self._flat(caption)
            if text:
                blocks.append(_paragraph_lines(text))
        if not any(any(row) for row in grid):
            return
        width = max(len(row) for row in grid)
        lines = []
        for i, row in enumerate(grid):
            if len(row) < width:
                row = row + [""] * (width - len(row))
            lines.append("| " + " | ".join(row) + " |")
            if i == 0:
                lines.append("|" + " --- |" * width)
        blocks.append("\n".join(lines))

    def _cell(self, cell: LexborNode) -> str:
        self.flatten += 1  # `_flat`, inlined: this runs once per cell
        try:
            text = self._inline(cell)
        finally:
            self.flatten -= 1
        text = _finish(text, True)
        if "|" in text:
            text = text.replace("|", "\\|")
        if "\n" in text:
            text = text.replace("\n", "<br>")
        return text

    def _grid(self, rows: list[list[LexborNode]]) -> list[list[str]]:
        """Spanned cells copied into every slot they cover (`tables: flatten`)."""
        height = len(rows)
        grid: list[dict[int, str]] = [{} for _ in rows]
        for r, row in enumerate(rows):
            col = 0
            for cell in row:
                while col in grid[r]:
                    col += 1
                text = self._cell(cell)
                colspan = _int_attr(cell.attrs.get("colspan"), 1, 1, 1000)
                rowspan = _int_attr(cell.attrs.get("rowspan"), 1, 0, 65534)
                last = height if rowspan == 0 else min(height, r + rowspan)
                for rr in range(r, last):
                    for cc in range(col, col + colspan):
                        grid[rr].setdefault(cc, text)
                col += colspan
        return [[slots.get(c, "") for c in range(max(slots, default=-1) + 1)] for slots in grid]

    def _html(self, node: LexborNode, out: list[str], in_pre: bool) -> None:
        """A table kept as raw HTML: only the allowed attributes, no comments, no blank line."""
        tag: str = node.tag  # pyright: ignore[reportAssignmentType] - see _TYPED
        attrs = ""
        allowed = ALLOWED_ATTRIBUTES.get(tag)
        if allowed:
            values = node.attributes
            for name in allowed:
                if name not in values:
                    continue
                value = values[name]
                if name == "class":
                    value = " ".join(language_words(value))
                    if not value:
                        continue
                elif name in ("href", "src") and value and value[:5].lower() != "data:":
                    value = self._url(value.strip())
                attrs += f" {name}" if value is None else f' {name}="{html_escape(value)}"'
        out.append(f"<{tag}{attrs}>")
        if tag in _VOID:
            return
        in_pre = in_pre or tag == "pre"
        if tag in _NEWLINE_AFTER_OPEN:
            out.append("\n")
        structure = tag in _TABLE_STRUCTURE
        child = node.child
        while child is not None:
            ctag: str = child.tag  # pyright: ignore[reportAssignmentType] - see _TYPED
            if ctag == "-text":
                text: str = child.text_content  # pyright: ignore[reportAssignmentType] - see _TYPED
                if in_pre:
                    out.append(html_escape(text, quote=False).replace("\n", "&#10;"))
                elif not structure or not text.isspace():
                    if "\n" in text or "  " in text or "\t" in text or "\r" in text or "\f" in text:
                        text = _COLLAPSE.sub(" ", text)
                    if "&" in text or "<" in text or ">" in text:
                        text = html_escape(text, quote=False)
                    out.append(text)
            elif ctag[0] != "-" and ctag not in REMOVED_TAGS:
                self._html(child, out, in_pre)
            child = child.next
        out.append(f"</{tag}>")
        if tag in _NEWLINE_AFTER_CLOSE:
            out.append("\n")

    # --- inline mode ----------------------------------------------------------------------

    def _inline(self, node: LexborNode) -> str:
        child = node.first_child
        if child is None:
            return ""
        if child.tag_id == TEXT_ID and child.next is None:
            # A lone text (`<a>text</a>`, `<td>text</td>`, most inline elements): no list to join.
            text = child.text_content  # pyright: ignore[reportAssignmentType] - see _TYPED
            if (
                "_" in text
                or "*" in text
                or "[" in text
                or "]" in text
                or "`" in text
                or "<" in text
                or "\\" in text
            ):
                return _escape(text)
            return text
        parts: list[str] = []
        get = self._inline_get
        while child is not None:
            tag = child.tag_id
            if tag == TEXT_ID:
                text: str = child.text_content  # pyright: ignore[reportAssignmentType] - see _TYPED
                if (
                    "_" in text
                    or "*" in text
                    or "[" in text
                    or "]" in text
                    or "`" in text
                    or "<" in text
                    or "\\" in text
                ):
                    text = _escape(text)
                parts.append(text)
            elif tag >= _FIRST_ELEMENT_ID:
                handler = get(tag)
                if handler is not None:
                    parts.append(handler(child))
                elif tag in _BLOCK_IDS:
                    if not self.flatten:
                        raise _HasBlock
                    if tag in _TABLE_STRUCTURE_IDS:
                        parts.append(self._flat_table(child))
                    elif tag == _PRE_ID:
                        parts.append(_flat_pre(child))
                    else:
                        parts.append(BREAK + self._inline(child) + BREAK)
                else:
                    parts.append(self._inline(child))
            child = child.next
        return "".join(parts)

    def _flat_table(self, node: LexborNode) -> str:
        """A table inside a heading or a cell: a line per row, cells separated by spaces."""
        out = []
        for child in node.iter():
            tag: str = child.tag  # pyright: ignore[reportAssignmentType] - see _TYPED
            if tag in ("td", "th"):
                out.append(" " + self._inline(child) + " ")
            elif tag in _TABLE_STRUCTURE:
                out.append(self._flat_table(child))
        return BREAK + "".join(out) + BREAK

    def _nothing(self, node: LexborNode) -> str:
        return ""

    def _br(self, node: LexborNode) -> str:
        return BREAK

    def _strike(self, node: LexborNode) -> str:
        if not self.strikethrough:
            return self._inline(node)
        return self._emphasis(2, _STRIKE_IDS, node)

    def _emphasis(self, kind: int, ids: frozenset[int], node: LexborNode) -> str:
        if self.merged and node.mem_id in self.merged:
            return ""  # written with the element before it
        if self.inside[kind]:  # already bold: `****` would end it
            return self._inline(node)
        self.inside[kind] += 1
        try:
            inner = self._inline(node)
            after = node.next
            if after is not None and after.tag_id in ids:
                # `<b>a</b><b>b</b>`: CommonMark cannot write two of them side by side (the
                # delimiters of `**a****b**` make one run, left as text): they make one. One
                # that holds a block ends the run; the caller converts it as a container.
                parts = [inner]
                while after is not None and after.tag_id in ids:
                    try:
                        parts.append(self._inline(after))
                    except _HasBlock:
                        break
                    self.merged.add(after.mem_id)
                    after = after.next
                inner = "".join(parts)
            return _wrap(inner, kind)
        finally:
            self.inside[kind] -= 1

    def _code(self, node: LexborNode) -> str:
        return _code_span(node.text())

    def _link(self, node: LexborNode) -> str:
        text = self._inline(node)
        href = node.attrs.get("href")
        href = href.strip() if href else ""
        if not href or href[:11].lower() == "javascript:":
            return text
        core = text.strip(_EDGE)
        if not core:
            if href[0] == "#":  # a permalink whose icon was removed: an empty element
                return text
            return text + "<" + self._url(href) + ">" if text else "<" + self._url(href) + ">"
        url = self._urls.get(href)  # `_url`'s cache, read here: most links are in it
        link = f"[{core}]({self._url(href) if url is None else url})"
        if len(core) == len(text):
            return link
        return _around(text, core, link)

    def _image(self, node: LexborNode) -> str:
        attrs = node.attrs
        alt = attrs.get("alt")
        alt = _text(alt) if alt else ""
        src = attrs.get("src")
        src = src.strip() if src else ""
        if not src or src[:5].lower() == "data:":
            return alt
        return f"![{alt}]({self._url(src)})"

    def _url(self, href: str) -> str:
        """href resolved against the base URL; cached, since pages repeat their links."""
        url = self._urls.get(href)
        if url is not None:
            return url
        if href.startswith(("https://", "http://")) or not self.base:
            url = href
        elif href.startswith("//"):
            url = f"{self.scheme}:{href}"
        elif href[0] == "/" and "/." not in href and self.origin:
            url = self.origin + href
        elif href[0] == "#":
            url = self.base_no_fragment + href
        else:
            try:
                url = urljoin(self.base, href)
            except ValueError:
                url = href
        url = _safe_url(url)
        self._urls[href] = url
        return url


def _plain(node: LexborNode) -> str:
    """A subtree nested deeper than Python's recursion allows (thousands of unclosed divs), as
    plain text: Lexbor gathers it without recursing in Python. The walk catches RecursionError
    where it dispatches, so the innermost element with room to spare degrades, not the page."""
    text = node.text()
    return _ESCAPE.sub(_escape_one, text) if _NEEDS_ESCAPE(text) is not None else text


def _raw_text(node: LexborNode) -> str:
    """The text of a pre, without the elements docs/tools.md removes and with `<br>` as a
    newline, for the rare pre that is not just <pre><code>."""
    out: list[str] = []
    for child in node.iter(include_text=True):
        tag: str = child.tag  # pyright: ignore[reportAssignmentType] - see _TYPED
        if tag == "-text":
            out.append(child.text_content)  # pyright: ignore[reportArgumentType]
        elif tag == "br":
            out.append("\n")
        elif tag[0] != "-" and tag not in REMOVED_TAGS:
            out.append(_raw_text(child))
    return "".join(out)


def _pre_code(node: LexborNode) -> tuple[str, str]:
    """A pre's code (without the blank lines around it) and its language."""
    inner = node.first_child
    if inner is not None and inner.next is None and inner.tag_id in (_CODE_ID, TEXT_ID):
        # The usual <pre><code>text</code></pre>, or <pre>text</pre>, read without a query.
        text = inner.first_child if inner.tag_id == _CODE_ID else inner
        if text is None:
            code = ""
        elif text.tag_id == TEXT_ID and text.next is None:
            code: str = text.text_content  # pyright: ignore[reportAssignmentType] - see _TYPED
        else:
            code = _pre_text(node, [inner.tag])  # pyright: ignore[reportArgumentType]
        tags = ("code",) if inner.tag_id == _CODE_ID else ()
    else:
        tags = [child.tag for child in node.iter()]
        code = _pre_text(node, tags)
        inner = None
    code = code.lstrip("\n").rstrip()
    if not code:
        return "", ""
    lang = code_language(node.attrs.get("class"))
    if not lang and "code" in tags:
        if inner is None:
            inner = node.css_first("code")
        lang = code_language(inner.attrs.get("class")) if inner is not None else ""
    return code, lang


def _pre_text(node: LexborNode, tags: list[str | None]) -> str:
    """A pre's text; `tags` are its children's."""
    if REMOVED_TAGS.isdisjoint(tags) and node.css_first("br") is None:
        return node.text()  # Lexbor gathers the text in C
    return _raw_text(node)  # a copy button beside the code, or lines made with <br>


def _flat_pre(node: LexborNode) -> str:
    """A pre inside a table cell or a heading: each line a code span, the lines separated by line
    breaks (`<br>` in a cell); blank lines go, as consecutive breaks count as one there."""
    code, _ = _pre_code(node)
    spans = []
    for line in code.split("\n"):
        line = line.rstrip()
        if not line:
            continue
        fence = "`"
        if "`" in line:
            fence = "`" * (max(len(run) for run in _BACKTICKS.findall(line)) + 1)
            if line[0] == "`" or line[-1] == "`":
                line = f" {line} "
        spans.append(fence + line.replace(" ", _KEPT_SPACE).replace("\t", _KEPT_TAB) + fence)
    return BREAK + BREAK.join(spans) + BREAK if spans else ""


_TABLES_HEADINGS_SPANS = ":is(table,h1,h2,h3,h4,h5,h6,[colspan],[rowspan])"
_HEADINGS = frozenset(("h1", "h2", "h3", "h4", "h5", "h6"))
_TEXT_BLOCKS = "p,ul,ol,blockquote,pre"
_FLOW_BLOCKS = ",".join(sorted(BLOCKS - {"tr", "td", "th", "thead", "tbody", "tfoot", "colgroup"}))


def _layout(table: LexborNode, rows: list[list[LexborNode]], nested: bool, heading: bool) -> bool:
    """Whether a table lays out a page rather than holding data: it says so (role presentation
    or none), it has a single cell, a cell holds a heading, its only row holds blocks, or it
    holds another table beside paragraphs, lists, quotes or code."""
    role = table.attributes.get("role")
    if role and role.strip().lower() in ("presentation", "none"):
        return True
    if len(rows) == 1 and len(rows[0]) == 1:
        return True
    if heading:
        return True
    if len(rows) == 1 and any(cell.css_first(_FLOW_BLOCKS) is not None for cell in rows[0]):
        return True
    return nested and table.css_first(_TEXT_BLOCKS) is not None


def _cells(tr: LexborNode) -> list[LexborNode]:
    return [cell for cell in tr.iter() if cell.tag_id in _CELL_IDS]


def _leading_checkbox(item: LexborNode) -> bool | None:
    """True/False for a checked/unchecked checkbox that starts the list item, None for none."""
    node = item.child
    depth = 0
    while node is not None and depth < 8:
        tag: str = node.tag  # pyright: ignore[reportAssignmentType] - see _TYPED
        if tag == "-text":
            if not node.text_content.isspace():  # pyright: ignore[reportOptionalMemberAccess]
                return None
            node = node.next
        elif tag[0] == "-" or tag in REMOVED_TAGS:
            node = node.next
        elif tag == "input":
            attrs = node.attrs
            if (attrs.get("type") or "").strip().lower() != "checkbox":
                return None
            return "checked" in attrs
        else:
            node = node.child  # the first content may be inside the first element
            depth += 1
    return None


def convert(root: LexborNode, options: Options) -> str:
    """A cleaned tree to Markdown ending with exactly one newline, or "" when nothing is left."""
    markdown = _Converter(options).render(root)
    if not markdown.isascii() and any(char in markdown for char in _PRIVATE):
        # Never expected (each paragraph settles its own), but a lone surrogate would make the
        # text impossible to encode: a fault here must cost a tag, not the page.
        markdown = markdown.replace(_KEPT_SPACE, " ").replace(_KEPT_TAB, "\t")
        markdown = _SENTINELS.sub("", markdown)
    return markdown + "\n" if markdown else ""


def _application_shell(html: str) -> bool:
    """A page with scripts and not a word of its own without them (its body empty but for a
    `<div id="root"></div>` the scripts fill): not a page whose words were all navigation."""
    tree = LexborHTMLParser(html, options=LexborDocumentOptions.WO_EVENTS, scripting=True)
    if tree.css_first("script") is None:
        return False
    tree.strip_tags(["script", "style", "noscript", "template"])
    body = tree.body
    return body is None or not body.text(deep=True).strip()


@dataclass(frozen=True)
class Conversion:
    markdown: str  # "" when no content is left
    scripted: bool  # nothing is left, and the page has scripts: it builds its content with them
    noscript: str  # then the Markdown of its <noscript> elements ("" when they say nothing)


def convert_page(
    html: str,
    *,
    base_url: str = "",
    tables: str = "html",
    strikethrough: bool = False,
    task_list: bool = False,
) -> Conversion:
    """The whole conversion of the tool, from decoded text: parse, clean, convert; and for a
    page that comes out empty, whether it is an application that scripts fill (an empty
    `<div id="root">` and a bundle), with what its `<noscript>` says to a reader without them."""
    # scripting=True reads <noscript> as a browser running scripts does, as raw text, so its
    # content stays inside it (and goes with it) even in <head>; without mutation events Lexbor
    # parses a tenth faster, and nothing here needs them.
    tree = LexborHTMLParser(html, options=LexborDocumentOptions.WO_EVENTS, scripting=True)
    options = Options(base_url, tables, strikethrough, task_list)
    clean(tree)
    root = tree.body or tree.root
    markdown = "" if root is None else convert(root, options)
    if markdown or not _application_shell(html):
        return Conversion(markdown, scripted=False, noscript="")
    fallback = "".join(node.text(deep=True) for node in tree.css("noscript"))
    noscript = ""
    if fallback.strip():  # the raw HTML a browser without scripts would show
        inner = LexborHTMLParser(fallback, options=LexborDocumentOptions.WO_EVENTS)
        clean(inner)
        body = inner.body or inner.root
        noscript = "" if body is None else convert(body, options)
    return Conversion("", scripted=True, noscript=noscript)


def html_to_markdown(
    html: str,
    *,
    base_url: str = "",
    tables: str = "html",
    strikethrough: bool = False,
    task_list: bool = False,
) -> str:
    """The whole conversion of the tool, from decoded text: parse, clean, convert."""
    return convert_page(
        html,
        base_url=base_url,
        tables=tables,
        strikethrough=strikethrough,
        task_list=task_list,
    ).markdown
