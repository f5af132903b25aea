"""fetch_content's request against a real server on 127.0.0.1: redirections, statuses, the
deadline, the size limit, the accepted types and the encodings."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from support.fetch_server import WebServer, closed_port_url
from support.waiting import wait_until

from mm_tui.config import Settings
from mm_tui.tools.base import ToolContext
from mm_tui.tools.fetch import FetchContentArgs, FetchContentTool
from mm_tui.tools.fetch.encoding import choose_encoding, codec_for, decode, looks_like_html
from mm_tui.tools.fetch.errors import FetchError
from mm_tui.tools.fetch.robots import RobotsCache

PAGE = "<html><body><p>Hello</p></body></html>"
MIB = 1024 * 1024


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, settings=Settings())


async def fetch(url: str, ctx: ToolContext, timeout: float = 5, **args: object) -> str:
    tool = FetchContentTool(timeout=timeout, robots_cache=RobotsCache())
    result = await tool.run(FetchContentArgs(url=url, **args), ctx)  # type: ignore[arg-type]
    assert result.status == ("error" if result.output.startswith("[fetch_content: error") else "ok")
    return result.output


# --- redirections --------------------------------------------------------------------------


def chain(web: WebServer, hops: int) -> str:
    for i in range(hops):
        web.redirect(f"/r{i}", f"/r{i + 1}", status=(301, 302, 303, 307, 308)[i % 5])
    web.page(f"/r{hops}", PAGE)
    return web.url("/r0")


async def test_ten_redirections_are_followed(ctx: ToolContext) -> None:
    with WebServer() as web:
        assert await fetch(chain(web, 10), ctx) == "Hello\n"
        # robots.txt asked once (then cached), every hop once
        assert [h.path for h in web.requests] == ["/robots.txt"] + [f"/r{i}" for i in range(11)]


async def test_eleven_redirections_are_refused(ctx: ToolContext) -> None:
    with WebServer() as web:
        url = chain(web, 11)
        assert await fetch(url, ctx) == (
            f"[fetch_content: error 2 (input) — more than 10 redirections from {url}]"
        )
        assert web.hits("/r11") == 0


async def test_relative_links_resolve_against_the_final_url(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.redirect("/old", "/new/dir/page")
        web.page("/new/dir/page", '<p><a href="other">o</a></p>')
        assert await fetch(web.url("/old"), ctx) == f"[o]({web.url('/new/dir/other')})\n"


async def test_base_url_argument(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.page("/", '<p><a href="a/b">o</a> <img src="/i.png" alt="i"></p>')
        assert await fetch(web.url("/"), ctx, baseUrl="https://docs.example/v2/") == (
            "[o](https://docs.example/v2/a/b) ![i](https://docs.example/i.png)\n"
        )


async def test_redirect_to_another_scheme(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.redirect("/", "ftp://files.example/x")
        assert await fetch(web.url("/"), ctx) == (
            f"[fetch_content: error 2 (input) — {web.url('/')} redirected to "
            '"ftp://files.example/x", which is not an http or https URL]'
        )


# --- statuses, reachability, deadline --------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "phrase"),
    [(404, "Not Found"), (500, "Internal Server Error"), (304, "Not Modified")],
)
async def test_status_300_and_above_is_an_input_error(
    ctx: ToolContext, status: int, phrase: str
) -> None:
    with WebServer() as web:
        web.route("/", status=status, body=b"" if status == 304 else b"x")
        assert await fetch(web.url("/"), ctx) == (
            f"[fetch_content: error 2 (input) — {web.url('/')} answered HTTP {status} {phrase}]"
        )


async def test_redirect_without_location(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.route("/", status=302, body=b"")
        assert await fetch(web.url("/"), ctx) == (
            f"[fetch_content: error 2 (input) — {web.url('/')} answered HTTP 302 Found]"
        )


async def test_unreachable_host(ctx: ToolContext) -> None:
    url = closed_port_url()
    output = await fetch(url, ctx)
    assert output.startswith("[fetch_content: error 2 (input) — cannot reach 127.0.0.1: ")


async def test_slow_server_times_out(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.route("/", delay=10, body=b"late")
        output = await fetch(web.url("/"), ctx, timeout=0.4)
        assert output == (  # without the timeout: "late", 10 s later
            f"[fetch_content: error 2 (input) — {web.url('/')} did not answer in full within 0.4 s]"
        )


async def test_deadline_covers_the_whole_fetch(ctx: ToolContext) -> None:
    """Each step is quick, but robots.txt, a redirect and a slow body add up past the limit."""
    with WebServer() as web:
        web.route("/robots.txt", delay=0.25, body=b"")
        web.redirect("/", "/page")
        web.route("/page", delay=0.25, body=PAGE.encode(), headers={"Content-Type": "text/html"})
        output = await fetch(web.url("/"), ctx, timeout=0.4)
        assert output.endswith("did not answer in full within 0.4 s]")


# --- size ----------------------------------------------------------------------------------


def stream(total: int, chunk: int = 64 * 1024):
    head = b"<html><body><p>"
    yield head
    sent = len(head)
    while sent < total:
        yield b"x" * chunk
        sent += chunk


async def test_body_over_5_mib_refused_without_reading_the_rest(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.route("/", body=stream(64 * MIB), headers={"Content-Type": "text/html"})
        output = await fetch(web.url("/"), ctx)
        assert (
            output == f"[fetch_content: error 1 (conversion) — {web.url('/')} is larger than 5 MiB]"
        )
        # the server met a closed connection long before the end
        assert wait_until(lambda: "/" in web.finished), "the server is still sending"
        assert web.sent["/"] < 40 * MIB


async def test_content_length_over_5_mib_refused_at_once(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.route(
            "/",
            body=stream(6 * MIB),
            headers={"Content-Type": "text/html", "Content-Length": str(6 * MIB)},
        )
        output = await fetch(web.url("/"), ctx)
        assert (
            output == f"[fetch_content: error 1 (conversion) — {web.url('/')} is larger than 5 MiB]"
        )


async def test_body_just_under_5_mib_accepted(ctx: ToolContext) -> None:
    body = b"<p>" + b"a" * (5 * MIB - 10) + b"</p>"
    with WebServer() as web:
        web.route("/", body=body, headers={"Content-Type": "text/html"})
        output = await fetch(web.url("/"), ctx)
        assert output.startswith("aaaa") and "[... output truncated:" in output


async def test_gzip_body_counted_after_decoding(ctx: ToolContext) -> None:
    huge = b"<p>" + b"z" * (6 * MIB) + b"</p>"
    with WebServer() as web:
        web.route(
            "/",
            body=gzip.compress(huge),
            headers={"Content-Type": "text/html", "Content-Encoding": "gzip"},
        )
        output = await fetch(web.url("/"), ctx)
        assert output.endswith("is larger than 5 MiB]")


# --- types ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["application/json", "application/pdf", "text/plain", "image/png"])
async def test_non_html_types_refused(ctx: ToolContext, kind: str) -> None:
    with WebServer() as web:
        web.page("/", "<p>looks like html</p>", content_type=f"{kind}; charset=utf-8")
        assert await fetch(web.url("/"), ctx) == (
            f"[fetch_content: error 1 (conversion) — {web.url('/')} is not an HTML page "
            f"(Content-Type: {kind})]"
        )


async def test_xhtml_accepted(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.page(
            "/",
            '<html xmlns="http://www.w3.org/1999/xhtml"><body><p>X</p></body></html>',
            content_type="application/xhtml+xml",
        )
        assert await fetch(web.url("/"), ctx) == "X\n"


async def test_no_content_type_sniffed_as_html(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.page(
            "/", "\n  <!DOCTYPE html><html><body><p>Sniffed</p></body></html>", content_type=None
        )
        assert await fetch(web.url("/"), ctx) == "Sniffed\n"


async def test_no_content_type_and_not_html(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.page("/", '{"json": true}', content_type=None)
        assert await fetch(web.url("/"), ctx) == (
            f"[fetch_content: error 1 (conversion) — {web.url('/')} is not an HTML page "
            "(no Content-Type, and it does not start like HTML)]"
        )


def test_sniffing_patterns() -> None:
    assert looks_like_html(b"<!doctype HTML>")
    assert looks_like_html(b"\t<HTML lang=en>")
    assert looks_like_html(b"<p>x")
    assert looks_like_html(b"<!-- c -->")
    assert looks_like_html(b"\xef\xbb\xbf<div>")
    assert looks_like_html("\ufeff<html>".encode("utf-16-le"))
    assert not looks_like_html(b"<pre>x")  # <p must end there
    assert not looks_like_html(b"<?xml version='1.0'?>")
    assert not looks_like_html(b"%PDF-1.7")


# --- encodings -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        (
            b"\xef\xbb\xbf<p>caf\xc3\xa9</p>",
            "text/html; charset=windows-1252",
            "café\n",
        ),  # BOM wins
        ("\ufeff<p>ü</p>".encode("utf-16-le"), "text/html", "ü\n"),
        ("\ufeff<p>ü</p>".encode("utf-16-be"), "text/html; charset=utf-8", "ü\n"),
        ("<p>Ελληνικά</p>".encode("iso-8859-7"), "text/html; charset=ISO-8859-7", "Ελληνικά\n"),
        (  # the header beats the meta
            '<meta charset="utf-8"><p>Привет</p>'.encode("koi8-r"),
            'text/html; charset="koi8-r"',
            "Привет\n",
        ),
        ('<meta charset="windows-1251"><p>Привет</p>'.encode("cp1251"), "text/html", "Привет\n"),
        (
            '<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-2"><p>Łódź</p>'.encode(
                "iso-8859-2"
            ),
            "text/html",
            "Łódź\n",
        ),
        (
            '<html><head><meta charset="Shift_JIS"></head><body><p>日本語のテキスト</p></body></html>'.encode(
                "shift_jis"
            ),
            "text/html",
            "日本語のテキスト\n",
        ),
        ("<p>naïve ✓</p>".encode(), "text/html", "naïve ✓\n"),  # valid UTF-8, nothing declared
        (
            b"<p>caf\xe9 \x93quoted\x94 \x81</p>",
            "text/html",
            "café “quoted” \x81\n",
        ),  # windows-1252
        (  # unknown names skipped: the header's, then the meta's; the bytes are valid UTF-8
            '<meta charset="klingon"><p>é</p>'.encode(),
            "text/html; charset=x-unknown",
            "é\n",
        ),
        (b"<p>\xe9t\xe9</p>", "text/html; charset=base64", "été\n"),  # not a text encoding: unknown
        (b"<p>caf\xe9</p>", "text/html; charset=iso-8859-1", "café\n"),  # read as windows-1252
    ],
    ids=[
        "bom utf-8",
        "bom utf-16le",
        "bom utf-16be",
        "header",
        "header over meta",
        "meta charset",
        "meta http-equiv",
        "shift_jis in meta",
        "valid utf-8",
        "invalid utf-8 is windows-1252",
        "unknown names skipped",
        "non-text codec",
        "latin-1 label",
    ],
)
async def test_encodings(ctx: ToolContext, body: bytes, content_type: str, expected: str) -> None:
    with WebServer() as web:
        web.page("/", body, content_type=content_type)
        assert await fetch(web.url("/"), ctx) == expected


def test_meta_beyond_4_kib_is_not_read() -> None:
    body = b"<!--" + b" " * 5000 + b'--><meta charset="koi8-r"><p>\xf0</p>'
    assert choose_encoding(body, None) == ("windows-1252", 0)  # not valid UTF-8, no meta seen


def test_meta_in_a_comment_is_not_read() -> None:
    assert choose_encoding(b'<!-- <meta charset="koi8-r"> --><p>a</p>', None) == ("utf-8", 0)


def test_meta_declaring_utf16_means_utf8() -> None:
    assert choose_encoding(b'<meta charset="utf-16"><p>a</p>', None) == ("utf-8", 0)


def test_labels() -> None:
    assert codec_for("Shift_JIS") == "cp932"
    assert codec_for(" UTF8 ") == "utf-8"
    assert codec_for("latin2") == "iso8859-2"
    assert codec_for("utf-7") is None
    assert codec_for("rot13") is None
    assert codec_for("") is None


def test_binary_content_is_undecodable() -> None:
    with pytest.raises(FetchError) as caught:
        decode(bytes(range(256)) * 20, "text/html", "https://x.org/f")
    assert caught.value.message == (
        "[fetch_content: error 1 (conversion) — https://x.org/f cannot be decoded: its bytes are "
        "not text in windows-1252]"
    )


# --- undeclared encodings: charset-normalizer's guess for non-Latin scripts (mm's extension) ---

RUSSIAN = (
    "<html><body><h1>Новости</h1><p>Сегодня в Москве прошла встреча представителей разных "
    "стран, на которой обсуждались вопросы экономики и культуры. Участники отметили важность "
    "сотрудничества.</p><p>Погода была хорошей, и многие жители вышли на прогулку.</p></body></html>"
)
JAPANESE = (
    "<html><body><h1>ニュース</h1><p>今日、東京で各国の代表者が集まり、経済と文化について話し合い"
    "ました。参加者は協力の重要性を強調しました。</p><p>天気が良く、多くの市民が公園を散歩しました。"
    "</p></body></html>"
)
CHINESE = (
    "<html><body><h1>新闻</h1><p>今天，各国代表在北京举行会议，讨论了经济和文化问题。与会者强调了"
    "合作的重要性。</p><p>天气很好，许多市民在公园散步。</p></body></html>"
)
GERMAN = (
    "<html><body><p>Größere Änderungen wurden für die Übersetzung vorgenommen. Die Bürger mögen "
    "schöne Straßen, grüne Wälder und frische Brötchen – „natürlich“.</p></body></html>"
)
CZECH = (
    "<html><body><p>Dnes se v Praze sešli zástupci různých zemí, aby diskutovali o ekonomice a "
    "kultuře. Účastníci zdůraznili důležitost spolupráce.</p></body></html>"
)


@pytest.mark.parametrize(
    ("page", "encoding", "chosen"),
    [
        (RUSSIAN, "cp1251", "cp1251"),
        (RUSSIAN, "koi8-r", "koi8-r"),
        (JAPANESE, "shift_jis", "cp932"),
        (JAPANESE, "euc-jp", "euc_jp"),  # charset-normalizer says euc_jis_2004
        (CHINESE, "gb18030", "gb18030"),
        (GERMAN, "cp1252", "windows-1252"),  # charset-normalizer says windows-1250: not taken
        (CZECH, "cp1250", "windows-1252"),  # a Latin script: docs/tools.md's fallback stays
    ],
    ids=[
        "russian cp1251",
        "russian koi8-r",
        "japanese",
        "japanese euc-jp",
        "chinese",
        "german",
        "czech",
    ],
)
def test_an_undeclared_non_latin_page_is_guessed(page: str, encoding: str, chosen: str) -> None:
    assert choose_encoding(page.encode(encoding), "text/html") == (chosen, 0)


async def test_an_undeclared_russian_page_reads_as_russian(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.page("/", RUSSIAN.encode("cp1251"), content_type="text/html")
        text = await fetch(web.url("/"), ctx)
    assert "# Новости" in text and "Погода была хорошей" in text


def test_a_declared_encoding_is_never_second_guessed() -> None:
    body = RUSSIAN.encode("cp1251")
    assert choose_encoding(body, "text/html; charset=windows-1252") == ("windows-1252", 0)


def test_a_few_accented_bytes_are_too_little_to_guess_from() -> None:
    """charset-normalizer reads `café “quoted”` in windows-1252 as Arabic windows-1256; with
    fewer than GUESS_EVIDENCE bytes above 0x7F it is not asked."""
    body = "<p>café “quoted” and a few more words, naïve résumé</p>".encode("cp1252")
    assert choose_encoding(body, "text/html") == ("windows-1252", 0)


# --- a declared encoding the bytes are not text in: skipped like an unknown name ----------------


def note(url: str, declared: str, used: str) -> str:
    return f"[fetch_content: {url} declares {declared}, but its bytes are not {declared} text — read as {used}]"


async def test_a_meta_utf8_over_windows_1251_bytes_is_skipped(ctx: ToolContext) -> None:
    page = RUSSIAN.replace("<html>", '<html><head><meta charset="utf-8"></head>')
    with WebServer() as web:
        web.page("/", page.encode("cp1251"), content_type="text/html")
        text = await fetch(web.url("/"), ctx)
        assert text.startswith("# Новости\n\nСегодня в Москве прошла встреча")
        assert text.endswith(
            "вышли на прогулку.\n" + note(web.url("/"), "UTF-8", "windows-1251") + "\n"
        )


async def test_a_header_utf8_over_shift_jis_bytes_is_skipped(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.page("/", JAPANESE.encode("shift_jis"), content_type="text/html; charset=utf-8")
        text = await fetch(web.url("/"), ctx)
        assert text.startswith("# ニュース\n\n今日、東京で各国の代表者が集まり")
        assert text.endswith(note(web.url("/"), "UTF-8", "Shift_JIS") + "\n")


async def test_the_meta_is_read_when_the_header_does_not_fit(
    ctx: ToolContext, tmp_path: Path
) -> None:
    page = RUSSIAN.replace("<html>", '<html><head><meta charset="windows-1251"></head>')
    with WebServer() as web:
        web.page("/", page.encode("cp1251"), content_type="text/html; charset=UTF-8")
        result = await fetch(web.url("/"), ctx, output="news.md")
        lines = (tmp_path / "news.md").read_text().count("\n")
        assert result == (
            f"[fetch_content: saved {lines} lines of Markdown "
            f"({(tmp_path / 'news.md').stat().st_size} bytes) from {web.url('/')} to news.md — "
            "the content is not shown]\n" + note(web.url("/"), "UTF-8", "windows-1251")
        )
    assert (tmp_path / "news.md").read_text().startswith("# Новости\n")  # the Markdown alone


async def test_utf8_with_a_broken_byte_is_still_utf8(ctx: ToolContext) -> None:
    body = "<p>Сегодня в Москве прошла встреча, naïve ✓</p>".encode() + b"<p>caf\xe9</p>"
    with WebServer() as web:
        web.page("/", body, content_type="text/html; charset=utf-8")
        assert await fetch(web.url("/"), ctx) == (
            "Сегодня в Москве прошла встреча, naïve ✓\n\ncaf\ufffd\n"
        )


def test_binary_bytes_declared_utf8_name_both_encodings() -> None:
    with pytest.raises(FetchError) as caught:
        decode(bytes(range(256)) * 20, "text/html; charset=utf-8", "https://x.org/f")
    assert caught.value.message == (
        "[fetch_content: error 1 (conversion) — https://x.org/f cannot be decoded: its bytes are "
        "not text in windows-1252, nor in UTF-8, which it declares]"
    )


# --- a compression mm did not ask for -----------------------------------------------------------


@pytest.mark.parametrize("coding", ["br", "zstd"])
async def test_an_unasked_compression_is_named(ctx: ToolContext, coding: str) -> None:
    with WebServer() as web:
        # what follows the header does not matter: it is refused before the body is read
        web.route(
            "/",
            body=b"\x8b\x05\x80<p>Hello</p>\x03",
            headers={"Content-Type": "text/html; charset=utf-8", "Content-Encoding": coding},
        )
        output = await fetch(web.url("/"), ctx)
        asked = web.requests[-1].headers.get("Accept-Encoding", "")
    if coding in asked:
        pytest.skip(f"httpx decodes {coding} here (its decoder is installed)")
    assert output == (
        f"[fetch_content: error 1 (conversion) — {web.url('/')} was sent compressed with "
        f"{coding} (Content-Encoding: {coding}), which mm did not ask for and cannot decode]"
    )


async def test_a_content_encoding_that_is_no_compression_is_passed_through(
    ctx: ToolContext,
) -> None:
    with WebServer() as web:
        web.route(
            "/",
            body=b"<p>Hello</p>",
            headers={"Content-Type": "text/html", "Content-Encoding": "UTF-8"},
        )
        assert await fetch(web.url("/"), ctx) == "Hello\n"


async def test_an_undeclared_euc_jp_page_reads_as_japanese(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.page("/", JAPANESE.encode("euc-jp"), content_type="text/html")
        assert await fetch(web.url("/"), ctx) == (
            "# ニュース\n\n今日、東京で各国の代表者が集まり、経済と文化について話し合いました。"
            "参加者は協力の重要性を強調しました。\n\n天気が良く、多くの市民が公園を散歩しました。\n"
        )


# --- Greek: the page's language as a hint, and the variant that makes letters -----------------

GREEK_MENU = (
    "Ειδήσεις Εγγραφή Τεχνολογία Επικοινωνία Οικονομία Βιβλία Μουσική Αθλητικά Θέατρο Ελλάδα "
    "Αναζήτηση Άρθρα"
).split()
GREEK_MENU_PAGE = (
    '<html lang="el"><head><title>Ειδήσεις</title></head><body><ul>'
    + "".join(f"<li>{word}</li>" for word in GREEK_MENU)
    + "</ul></body></html>"
)
HOMER = (
    "<html><body><p>Ο Όμηρος ήταν αρχαίος Έλληνας ποιητής, στον οποίο αποδίδονται η Ιλιάδα και η "
    "Οδύσσεια. Άγνωστο παραμένει πότε ακριβώς έζησε. Άλλοι τον τοποθετούν στον όγδοο αιώνα."
    "</p></body></html>"
)


async def test_a_greek_page_that_says_its_language_reads_as_greek(ctx: ToolContext) -> None:
    # without lang="el", charset-normalizer reads these words in windows-1251
    with WebServer() as web:
        web.page("/", GREEK_MENU_PAGE.encode("iso-8859-7"), content_type="text/html")
        assert await fetch(web.url("/"), ctx) == "".join(f"- {w}\n" for w in GREEK_MENU)


@pytest.mark.parametrize(
    "head",
    [
        '<html lang="el-GR">',
        "<html xml:lang=el>",
        '<meta http-equiv="Content-Language" content="el">',
    ],
)
def test_the_language_hint_is_read_from_html_lang_or_meta(head: str) -> None:
    page = GREEK_MENU_PAGE.replace('<html lang="el">', "<html>" if "meta" in head else head)
    if "meta" in head:
        page = page.replace("<head>", "<head>" + head)
    assert choose_encoding(page.encode("iso-8859-7"), "text/html") == ("iso8859-7", 0)


async def test_a_short_greek_page_on_a_greek_domain_reads_as_greek(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No lang: the guesses are all Cyrillic, and the host's country says Greek, as browsers take
    # their fallback encoding from the domain. The page comes through the test server as a proxy.
    page = GREEK_MENU_PAGE.replace('<html lang="el">', "<html>").encode("iso-8859-7")
    with WebServer() as web:
        for variable in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.delenv(variable, raising=False)
        monkeypatch.setenv("HTTP_PROXY", web.origin)
        web.page("http://news.example.gr/", page, content_type="text/html")
        web.page("http://news.example.com/", page, content_type="text/html")
        assert await fetch("http://news.example.gr/", ctx) == "".join(
            f"- {w}\n" for w in GREEK_MENU
        )
        assert "Ειδήσεις" not in await fetch("http://news.example.com/", ctx)


@pytest.mark.parametrize(
    ("url", "codec"),
    [
        ("https://www.example.gr/news", "iso8859-7"),
        ("https://example.com.cy./", "iso8859-7"),
        ("https://EXAMPLE.GR/", "iso8859-7"),
        ("https://example.ru/", "cp1251"),
    ],
)
def test_the_domain_names_the_language_of_a_page_that_says_none(url: str, codec: str) -> None:
    page = GREEK_MENU_PAGE.replace('<html lang="el">', "<html>")
    text = page if codec == "iso8859-7" else "<p>Новости Регистрация Технологии Контакты</p>" * 3
    assert choose_encoding(text.encode(codec), "text/html", url) == (codec, 0)


def test_a_latin_page_on_a_greek_domain_stays_windows_1252() -> None:
    assert choose_encoding(GERMAN.encode("cp1252"), "text/html", "https://example.gr/") == (
        "windows-1252",
        0,
    )


async def test_iso_8859_7_is_told_from_windows_1253_by_its_letters(ctx: ToolContext) -> None:
    # the two differ on Ά: 0xB6 in ISO-8859-7 is ¶ in windows-1253, and 0xA2 the other way ’
    with WebServer() as web:
        web.page("/iso", HOMER.encode("iso-8859-7"), content_type="text/html")
        web.page("/win", HOMER.encode("cp1253"), content_type="text/html")
        expected = HOMER.removeprefix("<html><body><p>").removesuffix("</p></body></html>") + "\n"
        assert await fetch(web.url("/iso"), ctx) == expected
        assert await fetch(web.url("/win"), ctx) == expected


def test_a_latin_page_with_a_non_latin_lang_stays_windows_1252() -> None:
    # a template's lang="ru" over a German page: no guess says a non-Latin script
    page = GERMAN.replace("<html>", '<html lang="ru">')
    assert choose_encoding(page.encode("cp1252"), "text/html") == ("windows-1252", 0)
