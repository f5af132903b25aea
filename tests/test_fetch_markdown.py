"""fetch_content's conversion, rule by rule of the reference's "Conversion", "Unknown element",
"Empty element", "Escaping" and "Result" rows, each against the exact Markdown expected."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mm_tui.tools.fetch.markdown import html_to_markdown

BASE = "https://example.com/docs/page.html"


def md(html: str, **options: object) -> str:
    return html_to_markdown(html, base_url=BASE, **options)  # type: ignore[arg-type]


CONVERSION = [
    # h1-h6
    (
        "headings",
        "<h1>One</h1><h2>Two</h2><h3>Three</h3><h4>Four</h4><h5>Five</h5><h6>Six</h6>",
        "# One\n\n## Two\n\n### Three\n\n#### Four\n\n##### Five\n\n###### Six\n",
    ),
    ("heading with a break", "<h1>a<br>b</h1>", "# a b\n"),
    ("heading with a block inside", "<h2><div>x</div><div>y</div></h2>", "## x y\n"),
    # p, blank line between blocks
    ("paragraphs", "<p>First</p><p>Second</p>", "First\n\nSecond\n"),
    ("whitespace collapsed", "<p>  one\n\t two   three \n</p>", "one two three\n"),
    ("text beside blocks", "<div>before<p>inside</p>after</div>", "before\n\ninside\n\nafter\n"),
    # strong, b, em, i
    (
        "strong and em",
        "<p><strong>s</strong> <b>b</b> <em>e</em> <i>i</i></p>",
        "**s** **b** *e* *i*\n",
    ),
    ("emphasis spaces moved out", "<p>a<strong> spaced </strong>b</p>", "a **spaced** b\n"),
    ("nested strong", "<p><b>x <strong>y</strong></b></p>", "**x y**\n"),
    # inline code
    (
        "code kbd samp tt",
        "<p>Use <code>ls -l</code>, <kbd>Ctrl</kbd>, <samp>out</samp>, <tt>tt</tt></p>",
        "Use `ls -l`, `Ctrl`, `out`, `tt`\n",
    ),
    (
        "code with backticks",
        "<p><code>a `tick` b</code> and <code>`start</code></p>",
        "``a `tick` b`` and `` `start ``\n",
    ),
    ("code keeps specials", "<p><code>a_b *c* [d]</code></p>", "`a_b *c* [d]`\n"),
    # pre
    (
        "pre with language-x on code",
        '<pre><code class="hl language-python">def f():\n    return 1\n</code></pre>',
        "```python\ndef f():\n    return 1\n```\n",
    ),
    (
        "pre with lang-x, fence longer than any run inside",
        '<pre class="lang-go">x := `raw`\ny := ```\n</pre>',
        "````go\nx := `raw`\ny := ```\n````\n",
    ),
    (
        "pre without language",
        "<pre>  indented\n\n  blank above</pre>",
        "```\n  indented\n\n  blank above\n```\n",
    ),
    (
        "pre with a copy button beside the code",
        '<pre><button>Copy</button><code class="language-sh">ls</code></pre>',
        "```sh\nls\n```\n",
    ),
    (
        "pre with highlighting spans",
        "<pre><span>a</span> <b>b</b><br>c</pre>",
        "```\na b\nc\n```\n",
    ),
    # br, hr
    ("br is a hard break", "<p>line one<br>line two</p>", "line one\\\nline two\n"),
    ("two brs", "<p>line<br><br>gap</p>", "line\\\n\\\ngap\n"),
    ("br at the end of a paragraph", "<p>end<br></p>", "end\n"),
    ("hr", "<p>a</p><hr><p>b</p>", "a\n\n---\n\nb\n"),
    # blockquote
    (
        "blockquote, nested",
        "<blockquote><p>quoted</p><p>second</p><blockquote><p>nested</p></blockquote></blockquote>",
        "> quoted\n>\n> second\n>\n> > nested\n",
    ),
    # a
    (
        "link relative",
        '<p><a href="/x">rel</a> <a href="../up">up</a></p>',
        "[rel](https://example.com/x) [up](https://example.com/up)\n",
    ),
    ("link absolute", '<p><a href="https://o.org/">abs</a></p>', "[abs](https://o.org/)\n"),
    ("link without text", '<p><a href="https://e.org/empty"></a></p>', "<https://e.org/empty>\n"),
    ("javascript link", '<p><a href="javascript:void(0)">js</a></p>', "js\n"),
    ("link without href", "<p><a>no href</a></p>", "no href\n"),
    (
        "permalink with its icon removed",
        '<h2>Title <a href="#t"><svg></svg></a></h2>',
        "## Title\n",
    ),
    (
        "link with spaces in its text",
        '<p>a<a href="/x"> b </a>c</p>',
        "a [b](https://example.com/x) c\n",
    ),
    (
        "link with unbalanced parenthesis",
        '<p><a href="/a(b">x</a></p>',
        "[x](https://example.com/a%28b)\n",
    ),
    (
        "link around an image",
        '<p><a href="/big"><img src="/small.png" alt="pic"></a></p>',
        "[![pic](https://example.com/small.png)](https://example.com/big)\n",
    ),
    # img
    (
        "image",
        '<p><img src="/i.png" alt="Alt [x]"></p>',
        "![Alt \\[x\\]](https://example.com/i.png)\n",
    ),
    ("image without alt", '<p><img src="i2.png"></p>', "![](https://example.com/docs/i2.png)\n"),
    (
        "image data URI: alt only",
        '<p>a <img src="data:image/png;base64,AAA" alt="inline"> b</p>',
        "a inline b\n",
    ),
    ("image data URI without alt", '<p>a<img src="data:image/png;base64,AAA">b</p>', "ab\n"),
    # lists
    (
        "nested lists indented by the parent marker's width",
        "<ul><li>a<ul><li>b<ol><li>c</li></ol></li></ul></li><li>d</li></ul>",
        "- a\n  - b\n    1. c\n- d\n",
    ),
    (
        "ol start, wider markers",
        '<ol start="9"><li>nine</li><li>ten<ul><li>sub</li></ul></li></ol>',
        "9. nine\n10. ten\n    - sub\n",
    ),
    (
        "list item with paragraphs",
        "<ul><li><p>one</p><p>two</p></li><li>three</li></ul>",
        "- one\n\n  two\n- three\n",
    ),
    (
        "empty items dropped",
        "<ul><li>one</li><li></li><li>  </li><li>two</li></ul>",
        "- one\n- two\n",
    ),
    (
        "list item with code",
        "<ol><li>run<pre>ls\n\nls -a</pre></li></ol>",
        "1. run\n\n   ```\n   ls\n\n   ls -a\n   ```\n",
    ),
    # simple tables
    (
        "simple table with caption, | and <br>",
        "<table><caption>Cap</caption><tr><th>A</th><th>B|C</th></tr>"
        "<tr><td>1<br>2</td><td><code>x|y</code></td></tr><tr><td>only</td></tr></table>",
        "Cap\n\n| A | B\\|C |\n| --- | --- |\n| 1<br>2 | `x\\|y` |\n| only |  |\n",
    ),
    (
        "table without th: first row is the header",
        "<table><tbody><tr><td>h1</td><td>h2</td></tr><tr><td>a</td><td>b</td></tr></tbody></table>",
        "| h1 | h2 |\n| --- | --- |\n| a | b |\n",
    ),
    (
        "table cell with paragraphs",
        "<table><tr><th>H</th></tr><tr><td><p>one</p><p>two</p></td></tr></table>",
        "| H |\n| --- |\n| one<br>two |\n",
    ),
    (
        "colspan=1 is still simple",
        '<table><tr><td colspan="1">a</td></tr></table>',
        "| a |\n| --- |\n",
    ),
    ("empty table", "<table><tr><td></td></tr></table>", ""),
    # tables with spans or nesting
    (
        "spanned table kept as HTML with the allowed attributes only",
        '<table class="t"><tr><th colspan="2" class="x" style="y">Wide</th></tr>'
        '<tr><td rowspan=2 id="r">R</td><td><a href="/l" title="t">L</a></td></tr>'
        "<tr><td>z <!-- c --></td></tr></table>",
        '<table>\n<tbody>\n<tr><th colspan="2">Wide</th></tr>\n'
        '<tr><td rowspan="2">R</td><td><a href="https://example.com/l">L</a></td></tr>\n'
        "<tr><td>z </td></tr>\n</tbody>\n</table>\n",
    ),
    (
        "nested table kept as HTML",
        "<table><tr><th>Out</th></tr><tr><td><table><tr><td>in</td></tr></table></td></tr></table>",
        "<table>\n<tbody>\n<tr><th>Out</th></tr>\n<tr><td><table>\n<tbody>\n<tr><td>in</td></tr>\n"
        "</tbody>\n</table></td></tr>\n</tbody>\n</table>\n",
    ),
]

FLATTEN = [
    (
        "spans copied into every slot",
        '<table><tr><th colspan="2">Wide</th><th>C</th></tr>'
        "<tr><td rowspan=2>R</td><td>x</td><td>y</td></tr><tr><td>z</td><td>w</td></tr></table>",
        "| Wide | Wide | C |\n| --- | --- | --- |\n| R | x | y |\n| R | z | w |\n",
    ),
    (
        "nested table flattened into its cell",
        "<table><tr><th>Out</th></tr><tr><td><table><tr><td>in1</td><td>in2</td></tr>"
        "<tr><td>in3</td></tr></table></td></tr></table>",
        "| Out |\n| --- |\n| in1 in2<br>in3 |\n",
    ),
    (
        "rowspan=0 to the end, caption above",
        '<table><caption>C</caption><tr><td rowspan="0">a</td><td>1</td></tr><tr><td>2</td></tr>'
        "<tr><td>3</td></tr></table>",
        "C\n\n| a | 1 |\n| --- | --- |\n| a | 2 |\n| a | 3 |\n",
    ),
]

FLAGS = [
    (
        "strikethrough off: plain text",
        "<p>a <del>old</del> <s>s</s> <strike>k</strike></p>",
        {},
        "a old s k\n",
    ),
    (
        "strikethrough on",
        "<p>a <del>old</del> <s>s</s> <strike>k</strike></p>",
        {"strikethrough": True},
        "a ~~old~~ ~~s~~ ~~k~~\n",
    ),
    (
        "task list off: checkbox dropped",
        '<ul><li><input type="checkbox" checked> done</li><li><input type="checkbox"> todo</li></ul>',
        {},
        "- done\n- todo\n",
    ),
    (
        "task list on",
        '<ul><li><input type="checkbox" checked> done</li>'
        '<li><label><input type="checkbox"> todo</label></li><li>plain <input type="checkbox"></li></ul>',
        {"task_list": True},
        "- [x] done\n- [ ] todo\n- plain\n",
    ),
    (
        "task list in an ordered list",
        '<ol><li><input type="checkbox"> first</li></ol>',
        {"task_list": True},
        "1. [ ] first\n",
    ),
]

UNKNOWN_AND_EMPTY = [
    (
        "unknown elements: tags dropped, text kept",
        '<p>x <span class="q">span</span> <custom-el>custom</custom-el> <abbr>abbr</abbr></p>',
        "x span custom abbr\n",
    ),
    (
        "unknown element holding a block is a container",
        "<span>before<div>inside</div>after</span>",
        "before\n\ninside\n\nafter\n",
    ),
    (
        "link holding blocks is a container",
        '<a href="/post"><h2>Card</h2><p>summary</p></a>',
        "## Card\n\nsummary\n",
    ),
    ("definition lists are containers", "<dl><dt>Term</dt><dd>Def</dd></dl>", "Term\n\nDef\n"),
    (
        "empty elements: nothing, no blank line",
        "<p>a</p><p></p><div></div><p><strong></strong><em> </em></p><ul></ul><blockquote></blockquote><p>b</p>",
        "a\n\nb\n",
    ),
    ("empty inline elements", "<p>a<strong></strong>b<em></em>c<code></code>d</p>", "abcd\n"),
    (
        "invalid HTML repaired",
        "<p>unclosed <b>bold <i>both</b> italic</p>",
        "unclosed **bold *both*** *italic*\n",
    ),
]

ESCAPING = [
    (
        "special characters",
        r"<p>\ * ` [ ] &lt; _a a_b b_ __init__ &amp; ~</p>",
        "\\\\ \\* \\` \\[ \\] \\< \\_a a_b b\\_ \\_\\_init\\_\\_ & ~\n",
    ),
    ("a_b inside a word is left alone", "<p>snake_case_name</p>", "snake_case_name\n"),
    ("# at a line start", "<p># h</p>", "\\# h\n"),
    ("> at a line start", "<p>&gt; q</p>", "\\> q\n"),
    ("- at a line start", "<p>- d</p>", "\\- d\n"),
    ("+ at a line start", "<p>+ p</p>", "\\+ p\n"),
    ("= at a line start", "<p>= e</p>", "\\= e\n"),
    ("| at a line start", "<p>| t</p>", "\\| t\n"),
    ("N. at a line start", "<p>12. n</p>", "12\\. n\n"),
    ("line start after a hard break", "<p>a<br># b<br>3. c</p>", "a\\\n\\# b\\\n3\\. c\n"),
    ("not in the middle of a line", "<p>a # b - c 1. d</p>", "a # b - c 1. d\n"),
    ("list item text starting with a marker", "<ul><li>- x</li></ul>", "- \\- x\n"),
    (
        "escaped in alt and link text",
        '<p><a href="/x">[a]*</a></p>',
        "[\\[a\\]\\*](https://example.com/x)\n",
    ),
]

REMOVED = [
    (
        "removed elements",
        "<script>x</script><style>y</style><noscript>n</noscript><template>t</template>"
        "<svg><text>s</text></svg><canvas>c</canvas><iframe>i</iframe><object>o</object><embed>"
        "<nav>n</nav><aside>a</aside><dialog>d</dialog><button>b</button>"
        "<select><option>o</option></select><textarea>t</textarea>"
        '<p>keep<!-- comment --> this <input type="text" value="v"><input type="checkbox"><input></p>',
        "keep this\n",
    ),
    (
        "head elements",
        '<html><head><title>Title</title><meta name="a" content="b"><link rel="x" href="y">'
        '<base href="/z"><noscript><p>no js</p></noscript></head><body><p>body</p></body></html>',
        "body\n",
    ),
    (
        "a script between words does not split the paragraph",
        "<p>one <script>x()</script>two</p>",
        "one two\n",
    ),
    (
        "roles, aria-hidden, hidden",
        '<div role="navigation">n</div><div role="banner">b</div><div role="complementary">c</div>'
        '<div role="search">s</div><div role="contentinfo">ci</div><div role="dialog">d</div>'
        '<div role="main">kept</div><p aria-hidden="true">ah</p><p hidden>hid</p>'
        '<p aria-hidden="false">shown</p>',
        "kept\n\nshown\n",
    ),
    (
        "class and id words",
        '<div class="ad">ad</div><div id="sidebar">sb</div><div class="cookie-banner">c</div>'
        '<div class="site-nav">n</div><div class="skip-link">s</div><div class="Promo">p</div>'
        '<div class="ads_top">a</div><div id="newsletter-form">nl</div><div class="share">sh</div>'
        '<div class="social-icons">so</div><div class="breadcrumbs">bc</div><div class="gdpr">g</div>'
        '<div class="consent">co</div><div class="popup">po</div><div class="modal">mo</div>'
        '<div class="subscribe">su</div><div class="sponsored">sp</div><div class="advert">av</div>'
        '<div class="menu">me</div><div class="navbar">nb</div><div class="navigation">ng</div>'
        '<div class="header">header kept</div><div class="shadow">shadow kept</div>'
        '<div class="shared-doc">shared kept</div>',
        "header kept\n\nshadow kept\n\nshared kept\n",
    ),
    (
        "screen-reader classes",
        '<p>a<span class="sr-only">sr</span><span class="visually-hidden">vh</span>'
        '<span class="screen-reader-text">srt</span>b</p>',
        "ab\n",
    ),
    (
        "matched by class but kept for main, article or h1 inside",
        '<div class="sidebar"><h1>Title kept</h1></div><div class="promo"><article><p>art kept</p>'
        '</article></div><div class="modal"><main><p>main kept</p></main></div>'
        '<article class="ad"><p>an ad article</p></article>',
        "# Title kept\n\nart kept\n\nmain kept\n",
    ),
    (
        "body and main never removed for a class",
        '<body class="has-sidebar"><main class="side-by-side"><p>kept</p></main></body>',
        "kept\n",
    ),
    (
        "footer outside article/main removed, inside kept",
        "<footer>site footer</footer><article><p>body</p><footer>article footer</footer></article>"
        "<main><footer>main footer</footer></main>",
        "body\n\narticle footer\n\nmain footer\n",
    ),
    (
        "nested removals",
        '<div class="sidebar"><div class="ad"><nav><div class="menu">x</div></nav></div></div><p>y</p>',
        "y\n",
    ),
]


@pytest.mark.parametrize(
    ("html", "expected"), [c[1:] for c in CONVERSION], ids=[c[0] for c in CONVERSION]
)
def test_conversion(html: str, expected: str) -> None:
    assert md(html) == expected


@pytest.mark.parametrize(
    ("html", "expected"), [c[1:] for c in FLATTEN], ids=[c[0] for c in FLATTEN]
)
def test_flatten_tables(html: str, expected: str) -> None:
    assert md(html, tables="flatten") == expected


@pytest.mark.parametrize(
    ("html", "options", "expected"), [c[1:] for c in FLAGS], ids=[c[0] for c in FLAGS]
)
def test_flags(html: str, options: dict[str, object], expected: str) -> None:
    assert md(html, **options) == expected


@pytest.mark.parametrize(
    ("html", "expected"), [c[1:] for c in UNKNOWN_AND_EMPTY], ids=[c[0] for c in UNKNOWN_AND_EMPTY]
)
def test_unknown_and_empty(html: str, expected: str) -> None:
    assert md(html) == expected


@pytest.mark.parametrize(
    ("html", "expected"), [c[1:] for c in ESCAPING], ids=[c[0] for c in ESCAPING]
)
def test_escaping(html: str, expected: str) -> None:
    assert md(html) == expected


@pytest.mark.parametrize(
    ("html", "expected"), [c[1:] for c in REMOVED], ids=[c[0] for c in REMOVED]
)
def test_removed(html: str, expected: str) -> None:
    assert md(html) == expected


def test_links_resolved_against_base_url() -> None:
    html = '<p><a href="a">x</a> <a href="//cdn.org/y">y</a> <a href="#f">z</a> <a href="?q=1">q</a></p>'
    assert html_to_markdown(html, base_url="https://h.org/dir/p#old") == (
        "[x](https://h.org/dir/a) [y](https://cdn.org/y) [z](https://h.org/dir/p#f) "
        "[q](https://h.org/dir/p?q=1)\n"
    )


def test_nothing_left_is_empty() -> None:
    assert (
        md(
            "<html><head><title>T</title></head><body><nav>menu</nav><script>x</script></body></html>"
        )
        == ""
    )


def test_no_title_or_preamble() -> None:
    assert (
        md("<html><head><title>The title</title></head><body><p>Text</p></body></html>") == "Text\n"
    )


@settings(max_examples=150, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("ab_*`[]<>#-+=|1. \n\t\\&é<>/pdivspanlibr")), max_size=80)
)
def test_any_input_ends_with_exactly_one_newline(text: str) -> None:
    """Whatever the bytes, the result is empty or ends with exactly one newline."""
    out = md(text)
    assert out == "" or (out.endswith("\n") and not out.endswith("\n\n"))
    assert "\x00" not in out


def test_nesting_deeper_than_python_recursion_degrades_to_text() -> None:
    html = "<div>" * 5000 + "<p>deep <b>text</b></p>" + "</div>" * 5000 + "<p>after</p>"
    assert md(html) == "deep text\n\nafter\n"
    assert md("<span>" * 3000 + "a_b *c*" + "</span>" * 3000) == "a_b \\*c\\*\n"


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ("<pre>$ <code>ls -l</code>\n</pre>", "```\n$ ls -l\n```\n"),
        (
            '<pre><code class="language-js">\nlet a = 1;\n\n</code></pre>',
            "```js\nlet a = 1;\n```\n",
        ),
        ("<pre>   </pre>", ""),
        ("<pre>one<br>two</pre>", "```\none\ntwo\n```\n"),
    ],
    ids=["text beside code", "blank lines around", "blank pre", "br lines"],
)
def test_pre_edges(html: str, expected: str) -> None:
    assert md(html) == expected


def test_empty_spanned_table_is_nothing() -> None:
    assert md('<p>a</p><table><tr><td colspan="2"> </td></tr></table><p>b</p>') == "a\n\nb\n"
