"""How fast fetch_content turns HTML into Markdown, against the converters one could have used.

The page is generated (seeded, so every run sees the same bytes) to look like a real one of about
4 MB: a header with navigation menus, a cookie banner, a sidebar of ads, inline and external
scripts, styles, comments, and an article made of headings, paragraphs with emphasis, code and
links, nested lists, simple and spanned tables, code blocks, quotes and images. Each converter gets
the same decoded text and is timed from that text to the Markdown string, parsing included:

- fetch_content's own pipeline (parse with selectolax, clean, convert);
- markdownify alone (BeautifulSoup with html.parser), the baseline of the speed goal;
- html2text;
- html-to-markdown (Rust, through its Python binding).

html2text and html-to-markdown are bench-only: when missing they are installed into this
interpreter with pip (never added to the project's dependencies); when that fails the row is
skipped with a note. Figures and ratios are printed; nothing is asserted, a benchmark informs.

Run: .venv/bin/python bench/bench_fetch.py [megabytes, 4 by default] [rounds, 6 by default]
     (--quick: 0.5 MB, 2 rounds; it installs nothing: a peer that is missing is skipped with
     a note, as `make test` runs it and a test must not change the environment it runs in)
"""

from __future__ import annotations

import importlib
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

WORDS = (
    "the of and to in is for that with on as by this are from at be or an it not which can have "
    "server client request response model token context agent file folder value option setting "
    "parser tree node element attribute table list item code block quote link image page site "
    "fast slow small large first last every some other each such only also more most very well "
    "returns keeps reads writes sends checks builds runs stops starts opens closes finds makes"
).split()


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _inline(rng: random.Random, n: int) -> str:
    parts = []
    for _ in range(n):
        roll = rng.random()
        w = _words(rng, rng.randint(3, 12))
        if roll < 0.08:
            parts.append(f"<strong>{w}</strong>")
        elif roll < 0.14:
            parts.append(f"<em>{w}</em>")
        elif roll < 0.22:
            parts.append(f"<code>{rng.choice(WORDS)}_{rng.choice(WORDS)}()</code>")
        elif roll < 0.34:
            parts.append(
                f'<a href="/docs/{rng.choice(WORDS)}/{rng.randint(1, 999)}" '
                f'class="link internal" title="{w}">{w}</a>'
            )
        elif roll < 0.37:
            parts.append(f'<span class="hl" data-x="{rng.randint(1, 99)}">{w}</span>')
        elif roll < 0.40:
            parts.append(f"{rng.choice(WORDS)}_{rng.choice(WORDS)} [{rng.randint(1, 9)}] *")
        else:
            parts.append(w + rng.choice((".", ",", ";", " —", "?", "")))
    # Pages come pretty-printed: text wrapped and indented by the template that wrote them.
    return rng.choice((" ", "\n      ", " ")).join(parts)


def _nav(rng: random.Random) -> str:
    items = "".join(
        f'<li class="menu-item"><a href="/{w}">{w.title()}</a>'
        + (
            '<ul class="sub-menu">'
            + "".join(f'<li><a href="/{w}/{v}">{v}</a></li>' for v in rng.sample(WORDS, 5))
            + "</ul>"
            if rng.random() < 0.5
            else ""
        )
        + "</li>"
        for w in rng.sample(WORDS, 8)
    )
    return f'<nav class="navbar" role="navigation"><ul class="menu">{items}</ul></nav>'


def _ads(rng: random.Random) -> str:
    return (
        f'<div class="ad-slot ad-{rng.randint(1, 9)}" id="ad-{rng.randint(100, 999)}">'
        '<script>googletag.cmd.push(function(){googletag.display("ad");});</script>'
        f'<iframe src="https://ads.example/{rng.randint(1, 1_000_000)}" width="300" height="250"></iframe>'
        f'<a href="https://ads.example/click"><img src="https://ads.example/b.png" alt="{_words(rng, 3)}"></a>'
        "</div>"
    )


def _list(rng: random.Random, depth: int, ordered: bool) -> str:
    tag = "ol" if ordered else "ul"
    items = []
    for _ in range(rng.randint(3, 6)):
        sub = ""
        if depth < 3 and rng.random() < 0.35:
            sub = _list(rng, depth + 1, rng.random() < 0.4)
        items.append(f"<li>{_inline(rng, rng.randint(1, 3))}{sub}</li>")
    start = f' start="{rng.randint(2, 9)}"' if ordered and rng.random() < 0.3 else ""
    return f"<{tag}{start}>" + "".join(items) + f"</{tag}>"


def _table(rng: random.Random) -> str:
    cols = rng.randint(3, 6)
    head = "".join(f"<th>{_words(rng, 2)}</th>" for _ in range(cols))
    rows = []
    for r in range(rng.randint(5, 15)):
        cells = []
        c = 0
        while c < cols:
            if r == 2 and c == 0 and rng.random() < 0.3:
                cells.append(f'<td colspan="2">{_words(rng, 3)}</td>')
                c += 2
                continue
            cells.append(f"<td>{_inline(rng, 1)}</td>")
            c += 1
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<table class="data"><caption>{_words(rng, 4)}</caption><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _code(rng: random.Random) -> str:
    lines = []
    for i in range(rng.randint(5, 25)):
        indent = "    " * rng.randint(0, 3)
        lines.append(
            f"{indent}{rng.choice(WORDS)}_{i} = {rng.choice(WORDS)}(&quot;{_words(rng, 2)}&quot;, "
            f"x &lt; {rng.randint(1, 99)} &amp;&amp; y)  # `{rng.choice(WORDS)}`"
        )
    lang = rng.choice(("python", "go", "js", "rust"))
    return (
        f'<pre class="highlight"><code class="language-{lang}">'
        + "\n".join(lines)
        + "</code></pre>"
    )


def _section(rng: random.Random, n: int) -> str:
    out = [f'<section id="s{n}"><h2 id="h{n}">{_words(rng, 5)}</h2>']
    for _ in range(rng.randint(4, 9)):
        roll = rng.random()
        if roll < 0.45:
            out.append(f"<p>{_inline(rng, rng.randint(4, 12))}</p>")
        elif roll < 0.58:
            out.append(_list(rng, 0, rng.random() < 0.4))
        elif roll < 0.66:
            out.append(_table(rng))
        elif roll < 0.76:
            out.append(_code(rng))
        elif roll < 0.81:
            out.append(f"<blockquote><p>{_inline(rng, 4)}</p><p>{_inline(rng, 3)}</p></blockquote>")
        elif roll < 0.86:
            out.append(
                f'<figure><img src="/img/{n}.png" alt="{_words(rng, 4)}" loading="lazy">'
                f"<figcaption>{_words(rng, 6)}</figcaption></figure>"
            )
        elif roll < 0.90:
            out.append(f"<h3>{_words(rng, 4)}</h3>")
        elif roll < 0.94:
            out.append(_ads(rng))
        else:
            out.append(
                f"<!-- {_words(rng, 10)} --><script>window.dataLayer.push({{n:{n}}});</script>"
            )
    out.append("</section>")
    return "\n  ".join(out)


def realistic_page(size: int = 4_000_000, seed: int = 5) -> str:
    """A page of about `size` characters with the mix of a real article page."""
    rng = random.Random(seed)
    head = (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>A long article</title>"
        '<meta name="viewport" content="width=device-width"><link rel="stylesheet" href="/s.css">'
        "<style>body{font:16px sans-serif} .ad-slot{min-height:250px}</style>"
        '<script src="https://cdn.example/analytics.js" async></script>'
        "<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}</script>"
        "</head><body>"
        f'<header class="site-header"><a class="skip-link" href="#main">Skip</a>{_nav(rng)}</header>'
        '<div class="cookie-banner" role="dialog"><p>We use cookies.</p><button>Accept</button></div>'
        '<div class="layout"><aside class="sidebar">'
        + "".join(_ads(rng) for _ in range(3))
        + '</aside><main id="main"><article><h1>A long article</h1>'
    )
    tail = (
        '<div class="share social"><a href="https://twitter.example/share">Share</a></div>'
        "</article></main></div>"
        '<footer class="site-footer"><p>© 2025</p>' + _nav(rng) + "</footer>"
        "<script>gtag('config','X');</script></body></html>"
    )
    parts = [head]
    total = len(head) + len(tail)
    n = 0
    while total < size:
        section = _section(rng, n)
        if n % 10 == 9:
            section += _nav(rng)
        parts.append(section)
        total += len(section)
        n += 1
    parts.append(tail)
    return "".join(parts)


def _ensure(module: str, package: str, install: bool = True) -> bool:
    """Import `module`, installing `package` into this interpreter first when it is missing
    (unless `install` is false: then its row is skipped with a note)."""
    try:
        importlib.import_module(module)
        return True
    except ImportError:
        pass
    if not install:
        print(f"note: {package} is not installed, its row is skipped (--quick installs nothing)")
        return False
    print(f"note: installing {package} for this benchmark (bench-only, not a project dependency)")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", package], capture_output=True, text=True
    )
    if done.returncode != 0:
        print(
            f"note: {package} could not be installed, its row is skipped: {done.stderr.strip()[:200]}"
        )
        return False
    importlib.invalidate_caches()
    try:
        importlib.import_module(module)
        return True
    except ImportError as exc:
        print(f"note: {package} installed but cannot be imported ({exc}), its row is skipped")
        return False


def _converters(install: bool = True) -> dict[str, Callable[[str], str]]:
    from mm_tui.tools.fetch.markdown import html_to_markdown as ours

    out: dict[str, Callable[[str], str]] = {
        "fetch_content": lambda html: ours(html, base_url="https://example.com/a"),
    }
    import markdownify  # pyright: ignore[reportMissingImports] - the bench extra (make bench)

    out["markdownify"] = lambda html: markdownify.markdownify(html)
    if _ensure("html2text", "html2text", install):
        import html2text  # pyright: ignore[reportMissingImports] - installed by _ensure

        def h2t(html: str) -> str:
            conv = html2text.HTML2Text(baseurl="https://example.com/a")
            conv.body_width = 0
            return conv.handle(html)

        out["html2text"] = h2t
    if _ensure("html_to_markdown", "html-to-markdown", install):
        import html_to_markdown as rust  # pyright: ignore[reportMissingImports] - by _ensure

        out["html-to-markdown"] = _html_to_markdown_call(rust)
    return out


def _html_to_markdown_call(module: object) -> Callable[[str], str]:
    convert = module.convert  # type: ignore[attr-defined]
    options: tuple[object, ...] = ()
    try:  # its fastest setting: no metadata extraction, which fetch_content does not do either
        options = (module.ConversionOptions(extract_metadata=False),)  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        pass

    def call(html: str) -> str:
        result = convert(html, *options)
        # Version 3 returns a str; later versions a result object with the Markdown in `content`.
        return result if isinstance(result, str) else getattr(result, "content", str(result))

    return call


def _timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main(megabytes: float, rounds: int, install: bool = True) -> None:
    from private_home import private_home

    private_home()  # a home of its own: none of the person's is read or written
    page = realistic_page(int(megabytes * 1_000_000))
    size_mb = len(page.encode()) / 1_000_000
    converters = _converters(install)
    print(f"page: {size_mb:.2f} MB of HTML, {rounds} rounds, best and median per converter")
    for conv in converters.values():  # warm up: imports, caches
        conv(page[:200_000])
    times: dict[str, list[float]] = {name: [] for name in converters}
    slow = {"markdownify", "html2text"}
    for r in range(rounds):
        for name, conv in converters.items():  # interleaved: a busy machine slows all alike
            if name in slow and r >= max(1, rounds // 3):
                continue  # seconds per call: a few rounds say enough
            t = time.perf_counter()
            md = conv(page)
            times[name].append(time.perf_counter() - t)
            if r == 0:
                print(f"  {name:17} {len(md):>9,} characters of Markdown")
    speed = {name: size_mb / min(ts) for name, ts in times.items()}
    from selectolax.lexbor import LexborHTMLParser

    parse = min(_timed(lambda: LexborHTMLParser(page)) for _ in range(rounds))
    print(f"(selectolax's parse alone: {size_mb / parse:.0f} MB/s, part of fetch_content's figure)")
    for name, ts in times.items():
        print(
            f"{name:17} {speed[name]:7.1f} MB/s best, {size_mb / statistics.median(ts):7.1f} MB/s median"
            f"  ({min(ts) * 1000:8.1f} ms)"
        )
    ours = speed["fetch_content"]
    for name in converters:
        if name != "fetch_content":
            print(f"fetch_content / {name:17} {ours / speed[name]:6.1f}x")
    print("goal: >= 10x markdownify and >= 1x html-to-markdown")


if __name__ == "__main__":
    if "--quick" in sys.argv:
        main(0.5, 2, install=False)
    else:
        main(
            float(sys.argv[1]) if len(sys.argv) > 1 else 4.0,
            int(sys.argv[2]) if len(sys.argv) > 2 else 6,
        )
