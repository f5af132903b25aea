"""Cleaning a parsed page: what is not the page's content goes before the conversion sees it.

Everything here works on selectolax's Lexbor tree, whose HTML5 parser has already repaired
invalid markup. The cost model decides the split of the work: a Python pass over every node of
a 4 MB page costs as much as the whole conversion, while a CSS query runs in C (a selector list
costs a walk of the tree per selector, so the list is one `:is()`).

- `clean()` removes what only attributes reveal, with one query: any role, aria-hidden, hidden,
  id, input or footer (few elements carry these), and the classes that contain a removed word's
  stem as a substring (most elements of a modern page have a class, so the narrowing is done in
  C). Python then decides for each of those few candidates.
- The elements removed for their tag alone (`REMOVED_TAGS`: script, style, nav…) are skipped by
  the converter as it walks, which costs nothing since it reads every tag anyway; a query would
  cost twenty selectors.
- HTML comments are never emitted (the converter and the raw-HTML serializer skip them), and
  attributes other than `ALLOWED_ATTRIBUTES` are never read nor written: a table kept as HTML is
  serialized with these attributes only.

Choices where the reference (docs/tools.md) is silent:

- a class or id "word" is a whole whitespace-separated token (an id is one token), or such a token
  once its `-` and `_` are taken out (`side-bar`, `skip-link`, `nav_bar`), never a fragment of a
  longer compound: `l-sidebar-fixed` is a layout holding the article, `ad-hoc-queries` and
  `sharing-with-a-single-developer` are documentation sections (Sphinx makes ids of titles),
  `menu-item-pricing` is a restaurant's menu; the "few variants" are the plurals and participles
  in `CLASS_WORDS`. The query's stems find the dash-less forms that pages write (`side-bar`,
  `nav-bar`, `pop-up`, `skip-link`, `bread-crumb`), not every way of splitting a word
  (`news-letter` is not found);
- removal by a class or id word applies to block elements only: an inline element (a link, a
  `span`, a custom element: any element outside `BLOCKS`) that holds no block element stays, as
  it sits inside a sentence (`<a class="popup">` is a link that opens a window); `hidden`,
  `aria-hidden` and the screen-reader classes remove inline elements too;
- `html`, `body` and `main` are never removed for a class or id: WordPress puts `has-sidebar` on
  `body`, and the page is not its sidebar;
- "contains main, article or h1" means a descendant, not the element itself: `<article class=ad>`
  is an ad; the keeping rule covers the screen-reader classes too;
- an `input` without a type is a text box, removed like any input other than a checkbox.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

REMOVED_TAGS = frozenset(
    (
        "script style noscript template meta link base title svg canvas iframe object embed nav "
        "aside dialog button select textarea"
    ).split()
)
"""Removed for their tag alone: the converter skips them (see the module's docstring)."""

REMOVED_ROLES = frozenset(
    ("navigation", "banner", "complementary", "search", "contentinfo", "dialog")
)

CLASS_WORDS = frozenset(
    (
        "ad ads advert adverts advertisement advertisements advertising "
        "sponsor sponsors sponsored promo promos promoted cookie cookies consent gdpr "
        "newsletter newsletters subscribe popup popups modal modals share sharing social "
        "breadcrumb breadcrumbs nav navbar navigation menu menus sidebar sidebars skiplink skiplinks"
    ).split()
)

HIDDEN_CLASSES = frozenset(("sr-only", "visually-hidden", "screen-reader-text"))

CONTAINERS = frozenset(
    (
        "html body div p section article main header footer address figure figcaption details "
        "summary dl dt dd form fieldset legend center hgroup search caption li tr td th thead "
        "tbody tfoot colgroup optgroup frameset noframes"
    ).split()
)
"""HTML's block-level elements without a Markdown block of their own: the converter's containers."""
SPECIAL_BLOCKS = frozenset("h1 h2 h3 h4 h5 h6 pre hr blockquote ul ol menu table".split())
"""Elements with a Markdown block of their own."""
BLOCKS = CONTAINERS | SPECIAL_BLOCKS
"""The block elements; any other element is inline unless it holds one of these."""

ALLOWED_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "a": ("href",),
    "img": ("src", "alt"),
    "td": ("colspan", "rowspan"),
    "th": ("colspan", "rowspan"),
    "ol": ("start",),
    "input": ("type", "checked"),
    "pre": ("class",),  # only its language-*/lang-* words, see `language_words`
    "code": ("class",),
}
"""The only attributes that survive cleaning, per element."""

KEEPERS = "main,article,h1"
"""An element removed for its class or id is kept when it contains one of these."""

_NEVER_BY_WORD = frozenset(("html", "body", "main"))

# Substrings that the words of CLASS_WORDS and HIDDEN_CLASSES contain ("ad" is in "breadcrumb"
# and "screen-reader-text"). Each costs a test per element: the list is kept short.
_STEMS = (
    "ad sponsor promo cookie consent gdpr newsletter subscribe pop modal shar social nav menu "
    "side skip sr-only visually-hidden"
).split()

# One `:is()` of the whole list: Lexbor walks the tree once for it, where a plain list costs a
# walk per selector (docs/performance.md, "fetch_content"), and it returns each element once,
# in document order. The class stems sit behind
# one `[class]`: Lexbor looks an attribute up by name for each selector it tries, and most
# elements have no class, so they fail that test once instead of once per stem.
_SELECTOR = ":is({},[class]:is({}))".format(
    ",".join(["input", "footer", "[role]", "[aria-hidden]", "[hidden]", "[id]"]),
    ",".join(f'[class*="{stem}" i]' for stem in _STEMS),
)
_LANGUAGE = re.compile(r"^(?:language|lang)-(.+)$")


def word_matches(value: str | None) -> bool:
    """Whether a class or id value holds one of the removed words as a whole token, or as a
    token written with `-` or `_` inside the word (`side-bar`)."""
    return _words_match(value.lower()) if value else False


def _words_match(lowered: str) -> bool:
    # No word of CLASS_WORDS holds `-` or `_`, so a token matches exactly when it does without
    # them; taking them out of the whole value keeps its tokens apart, and the test runs in C.
    return not CLASS_WORDS.isdisjoint(lowered.replace("-", "").replace("_", "").split())


def language_words(value: str | None) -> list[str]:
    """The language-x / lang-x words of a class: all that is kept of a pre's or code's class."""
    if not value:
        return []
    return [word for word in value.split() if _LANGUAGE.match(word)]


def code_language(value: str | None) -> str:
    """The `x` of the first language-x / lang-x word, for a fenced block's info string."""
    for word in language_words(value):
        match = _LANGUAGE.match(word)
        lang = match.group(1).replace("`", "") if match else ""
        if lang:
            return lang
    return ""


def _contains_keeper(node: LexborNode) -> bool:
    # Lexbor's scoped query also matches the node itself: look past it.
    return any(found.mem_id != node.mem_id for found in node.css(KEEPERS))


def _contains_block(node: LexborNode) -> bool:
    # A walk in Python: an inline element holds a few nodes, and a query of forty selectors
    # costs more than walking them. The element itself is inline, so it is no match.
    return any(inner.tag in BLOCKS for inner in node.traverse())


def _inside_article_or_main(node: LexborNode) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.tag in ("article", "main"):
            return True
        parent = parent.parent
    return False


def _removed(node: LexborNode) -> bool:
    """Whether an element the wide query found goes."""
    tag = node.tag
    attrs = node.attributes  # one call into Lexbor; each `attrs.get` would be one more
    if tag == "input":
        return (attrs.get("type") or "").strip().lower() != "checkbox"
    if "hidden" in attrs:
        return True
    value = attrs.get("aria-hidden")
    if value and value.strip().lower() == "true":
        return True
    value = attrs.get("role")
    if value and not REMOVED_ROLES.isdisjoint(value.lower().split()):
        return True
    if tag == "footer" and not _inside_article_or_main(node):
        return True
    if tag in _NEVER_BY_WORD:
        return False
    value = attrs.get("class")
    by_word = False
    if value:
        value = value.lower()
        if not HIDDEN_CLASSES.isdisjoint(value.split()):
            return not _contains_keeper(node)
        by_word = _words_match(value)
    if by_word or word_matches(attrs.get("id")):
        if tag not in BLOCKS and not _contains_block(node):
            return False  # inline: part of a sentence
        return not _contains_keeper(node)
    return False


def clean(tree: LexborHTMLParser) -> None:
    """Remove, in place, what docs/tools.md's "What is removed" names by role, attribute, class,
    id or place (the elements it names by tag are skipped by the converter)."""
    root = tree.root
    if root is None:
        return
    # A plain selector list would return an element once for each selector it matches
    # (`class="header sidebar"` thrice, with `[id]`), and freeing it twice crashes: `:is()`
    # returns it once, and the set keeps that true whatever the selector becomes. The query
    # returns document order; removing last-first takes a descendant out before its ancestor,
    # since removing the ancestor first would free the descendant this list holds.
    seen: set[int] = set()
    removed: list[LexborNode] = []
    for node in root.css(_SELECTOR):
        key = node.mem_id
        if key not in seen:
            seen.add(key)
            if _removed(node):
                removed.append(node)
    for node in reversed(removed):
        node.decompose()
