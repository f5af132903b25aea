"""fetch_content's conversion, rule by rule of the reference (docs/tools.md): "The conversion"
(elements, unknown and empty elements, escaping) and the form of the result, each against the
exact Markdown expected; and, where CommonMark decides what the Markdown means (emphasis next to
punctuation, code in a table cell), the Markdown read back by a CommonMark parser."""

from __future__ import annotations

import html

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from selectolax.lexbor import LexborNode

from mm_tui.tools.fetch import markdown as markdown_module
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
    (
        "emphasis side by side makes one",
        "<p><b>a</b><strong>b</strong> <i>c</i><em>d</em><i>e</i> <b>f</b> <b>g</b></p>",
        "**ab** *cde* **f** **g**\n",
    ),
    (
        "emphasis side by side, a block in the second",
        "<div><b>a</b><b>b<div>c</div></b><b>d</b></div>",
        "**a**\n\nb\n\nc\n\n**d**\n",
    ),
    (
        "emphasis: a no-break space moved out",
        "<p><b>Note:&nbsp;</b>text</p>",
        "**Note:**\xa0text\n",
    ),
    (
        "emphasis: an ideographic space moved out",
        "<p><b>注意：\u3000</b>本文</p>",
        "**注意：**\u3000本文\n",
    ),
    (
        "emphasis: punctuation inside, spaces outside",
        '<p>a <b>"quoted"</b> b</p>',
        'a **"quoted"** b\n',
    ),
    (
        "emphasis: punctuation inside, a letter outside: the HTML tag",
        '<p><b>"quoted"</b>x and <i>(this)</i>s</p>',
        '<strong>"quoted"</strong>x and <em>(this)</em>s\n',
    ),
    (
        "emphasis: CJK brackets inside, letters outside",
        "<p>これは<b>「重要」</b>です</p>",
        "これは<strong>「重要」</strong>です\n",
    ),
    (
        "emphasis around a link, letters outside",
        '<p>a<i><a href="/u">link</a></i>b</p>',
        "a<em>[link](https://example.com/u)</em>b\n",
    ),
    (
        "emphasis: punctuation inside a heading and a cell",
        '<h2>x<b>"y"</b>z</h2><table><tr><th>h</th></tr><tr><td>1<b>(2)</b>3</td></tr></table>',
        '## x<strong>"y"</strong>z\n\n| h |\n| --- |\n| 1<strong>(2)</strong>3 |\n',
    ),
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
        '<table><tr><td colspan="1">a</td><td>b</td></tr></table>',
        "| a | b |\n| --- | --- |\n",
    ),
    (
        "pre in a cell: a code span per line, <br> between lines",
        "<table><tr><th>Code</th><th>Note</th></tr><tr><td><pre>int f() {\n    // a comment\n\n"
        "    return a|b;\n}</pre></td><td>x</td></tr></table>",
        "| Code | Note |\n| --- | --- |\n"
        "| `int f() {`<br>`    // a comment`<br>`    return a\\|b;`<br>`}` | x |\n",
    ),
    (
        "pre in a cell with backticks",
        "<table><tr><th>A</th><th>B</th></tr><tr><td><pre>`x` y</pre></td><td>1</td></tr></table>",
        "| A | B |\n| --- | --- |\n| `` `x` y `` | 1 |\n",
    ),
    # layout tables: containers
    (
        "one-cell layout table",
        "<table><tr><td><h2>Title</h2><p>One</p><p>Two</p></td></tr></table>",
        "## Title\n\nOne\n\nTwo\n",
    ),
    (
        "one-cell table around a code block",
        '<table><tr><td><pre class="lang-sh">ls\ncd /</pre></td></tr></table>',
        "```sh\nls\ncd /\n```\n",
    ),
    (
        "cells holding headings and paragraphs",
        "<table><tr><td><h3>A</h3><p>a text</p></td><td><h3>B</h3><p>b text</p></td></tr>"
        "<tr><td><p>more</p></td><td>end</td></tr></table>",
        "### A\n\na text\n\n### B\n\nb text\n\nmore\n\nend\n",
    ),
    (
        "a single row of blocks: columns of a page",
        "<table><tr><td><p>left</p></td><td><ul><li>x</li></ul></td></tr></table>",
        "left\n\n- x\n",
    ),
    (
        "role presentation",
        '<table role="presentation"><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>',
        "a\n\nb\n\nc\n\nd\n",
    ),
    (
        "a layout table around a data table",
        "<table><tr><td><p>Story</p></td></tr><tr><td><table><tr><th>K</th><th>V</th></tr>"
        "<tr><td>a</td><td>1</td></tr></table></td></tr></table>",
        "Story\n\n| K | V |\n| --- | --- |\n| a | 1 |\n",
    ),
    (
        "a single row of short cells stays a table",
        "<table><tr><td>a</td><td>b</td></tr></table>",
        "| a | b |\n| --- | --- |\n",
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
        "a layout table is a container here too",
        '<table><tr><td><p>Story</p></td></tr><tr><td><table><tr><th colspan="2">K</th></tr>'
        "<tr><td>a</td><td>1</td></tr></table></td></tr></table>",
        "Story\n\n| K | K |\n| --- | --- |\n| a | 1 |\n",
    ),
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
        "strikethrough: punctuation inside, letters outside; nested",
        '<p>a<del>"old"</del>b <s>x <del>y</del></s></p>',
        {"strikethrough": True},
        'a<del>"old"</del>b ~~x y~~\n',
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
        "class and id words, as whole tokens",
        '<div class="ad">ad</div><div id="sidebar">sb</div><div class="Promo">p</div>'
        '<div class="card ads">a</div><div id="newsletter">nl</div><div class="share">sh</div>'
        '<div class="x social">so</div><div class="breadcrumbs">bc</div><div class="gdpr">g</div>'
        '<div class="consent">co</div><div class="popup">po</div><div class="modal">mo</div>'
        '<div class="subscribe">su</div><div class="sponsored">sp</div><div class="advert">av</div>'
        '<div class="menu">me</div><div class="navbar">nb</div><div class="navigation">ng</div>'
        '<div class="cookies">ck</div><div class="header">header kept</div>'
        '<div class="shadow">shadow kept</div><div class="shared-doc">shared kept</div>',
        "header kept\n\nshadow kept\n\nshared kept\n",
    ),
    (
        "class and id words written with - or _ inside",
        '<div class="side-bar">sb</div><div id="skip-link">s</div><div class="nav_bar">n</div>'
        '<div class="pop-up">p</div><div class="bread-crumbs">b</div><p>kept</p>',
        "kept\n",
    ),
    (
        "a word inside a longer compound is not the word",
        '<div class="l-sidebar-fixed"><div class="c-entry-content"><p>The whole article.</p>'
        '</div></div><section id="sharing-with-a-single-developer"><h2>Sharing</h2><p>Alice '
        'pushes.</p></section><section id="ad-hoc-queries"><p>Ad hoc.</p></section>'
        '<div class="menu-item-pricing">Soup: 5</div><div class="site-nav cookie-banner">c</div>',
        "The whole article.\n\n## Sharing\n\nAlice pushes.\n\nAd hoc.\n\nSoup: 5\n\nc\n",
    ),
    (
        "class and id words do not remove inline elements",
        '<p>Read <a class="popup" href="/n">this note</a>, <span class="share">share</span> it'
        ' <em id="ad">now</em> <custom-tag class="menu">please</custom-tag>.</p>',
        "Read [this note](https://example.com/n), share it *now* please.\n",
    ),
    (
        "an inline element holding blocks is a block",
        '<span class="ad"><div>block ad</div></span><a class="promo" href="/b"><p>Buy</p></a>'
        "<p>after</p>",
        "after\n",
    ),
    (
        "hidden inline elements are removed",
        '<p>a<span hidden>h</span><a aria-hidden="true" href="/x">x</a>b</p>',
        "ab\n",
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


def test_emphasis_edges_take_all_unicode_whitespace() -> None:
    """The characters moved outside the delimiters are every one `str.isspace` accepts."""
    spaces = {chr(code) for code in range(0x110000) if chr(code).isspace()}
    assert set(markdown_module._UNICODE_SPACE) == spaces


COMMONMARK = MarkdownIt("commonmark").enable("table")


@pytest.mark.parametrize(
    "html_text",
    [
        "<p><b>Note:&nbsp;</b>text</p>",
        "<p><b>注意：\u3000</b>本文</p>",
        '<p><b>"quoted"</b>x</p>',
        '<p>x<b>"quoted"</b></p>',
        "<p>これは<b>「重要」</b>です</p>",
        '<p>a<b><i>"x"</i></b>b</p>',
        '<p>a <b><i>"x"</i></b> b</p>',
        '<p><i>a</i> <b>"b"</b>c</p>',
        '<p>a<b><a href="/u">link</a></b>b</p>',
        "<p>x<b><code>f()</code></b>s</p>",
        "<p>x<b>\\</b>y</p>",
        "<p>*<b>*star*</b>*</p>",
    ],
)
def test_emphasis_reads_back_as_emphasis(html_text: str) -> None:
    rendered = COMMONMARK.render(md(html_text))
    assert "<strong>" in rendered or "<em>" in rendered
    assert rendered.count("<strong>") == html_text.count("<b>")
    assert rendered.count("<em>") == html_text.count("<i>")
    assert "**" not in rendered.replace("\\*", "")


_PIECES = list('ab1"().,「」！ \xa0\u3000*_')


def _text(draw: st.DrawFn, empty: bool) -> str:
    text = "".join(draw(st.lists(st.sampled_from(_PIECES), min_size=0 if empty else 1, max_size=4)))
    return html.escape(text)


@st.composite
def _emphasis(draw: st.DrawFn) -> tuple[str, int, int]:
    """A paragraph of text and emphasis, with how many b and i hold text. Never two elements side
    by side: those of one kind make one (another test), and a b beside an i is not this test's
    matter."""
    parts: list[str] = []
    strong = em = 0
    for _ in range(draw(st.integers(1, 4))):
        parts.append(_text(draw, empty=False))
        outer, inner = draw(st.sampled_from((("b", "i"), ("i", "b"))))
        body = _text(draw, empty=False)
        nested = not html.unescape(body).isspace()  # whether the inner element holds text
        if draw(st.booleans()):
            body = f"{_text(draw, True)}<{inner}>{body}</{inner}>{_text(draw, True)}"
        else:
            nested = False
        visible = html.unescape(body.replace(f"<{inner}>", "").replace(f"</{inner}>", ""))
        if visible.isspace():
            continue
        parts.append(f"<{outer}>{body}</{outer}>")
        strong += (outer == "b") + (nested and inner == "b")
        em += (outer == "i") + (nested and inner == "i")
    parts.append(_text(draw, empty=False))
    return "<p>" + "".join(parts) + "</p>", strong, em


@settings(max_examples=300, deadline=None)
@given(_emphasis())
def test_every_emphasis_reads_back(case: tuple[str, int, int]) -> None:
    """Whatever the characters around a b or an i, CommonMark reads each one back as emphasis."""
    html_text, strong, em = case
    rendered = COMMONMARK.render(md(html_text))
    assert (rendered.count("<strong>"), rendered.count("<em>")) == (strong, em), md(html_text)


def test_pre_in_a_cell_reads_back_line_by_line() -> None:
    html_text = (
        "<table><tr><th>Code</th><th>Note</th></tr><tr><td><pre>int f() {\n    // comment\n"
        "    return 1;\n}</pre></td><td>after</td></tr></table>"
    )
    for tables in ("html", "flatten"):
        rendered = COMMONMARK.render(md(html_text, tables=tables))
        assert (
            "<td><code>int f() {</code><br><code>    // comment</code><br>"
            "<code>    return 1;</code><br><code>}</code></td>\n<td>after</td>"
        ) in rendered


def test_each_element_decided_and_freed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lexbor returns an element once per selector of the list it matches: deciding it twice
    would free it twice."""
    from mm_tui.tools.fetch import clean as clean_module

    decided: list[int] = []
    real = clean_module._removed

    def counted(node: LexborNode) -> bool:
        decided.append(node.mem_id)
        return real(node)

    monkeypatch.setattr(clean_module, "_removed", counted)
    page = (
        '<div class="header sidebar promo" id="top" role="banner">x</div>'
        '<p class="shadow modal-x nav-y" id="p">kept</p>'
    )
    assert md(page) == "kept\n"
    assert len(decided) == len(set(decided)) == 2
