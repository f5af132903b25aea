"""robots.txt for fetch_content: the RFC 9309 matching, then the real fetches of a real server
(what a 404, a 500 or a dropped connection mean, the check before every redirection, the cache)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.fetch_server import WebServer

from mm_tui.config import Settings
from mm_tui.tools.base import ToolContext
from mm_tui.tools.fetch import FetchContentArgs, FetchContentTool
from mm_tui.tools.fetch.robots import Robots, RobotsCache, normalize, origin_of

PAGE = "<html><body><p>Hello</p></body></html>"


def allows(robots_txt: str, path: str) -> bool:
    return Robots.parse(robots_txt).allows("https://site.org" + path)


# --- matching ------------------------------------------------------------------------------


def test_mm_group_wins_over_star() -> None:
    txt = "User-agent: *\nDisallow: /\n\nUser-agent: mm\nDisallow: /private\n"
    assert allows(txt, "/public")
    assert not allows(txt, "/private/x")


def test_product_token_is_case_insensitive_and_ignores_a_version() -> None:
    assert not allows("User-agent: MM/2.0\nDisallow: /x\n", "/x")
    assert allows("User-agent: mmbot\nDisallow: /x\n", "/x")  # another crawler


def test_star_group_when_no_mm_group() -> None:
    txt = "User-agent: googlebot\nDisallow: /\n\nUser-agent: *\nDisallow: /tmp/\n"
    assert allows(txt, "/")
    assert not allows(txt, "/tmp/file")


def test_no_group_allows_everything() -> None:
    assert allows("User-agent: googlebot\nDisallow: /\n", "/anything")
    assert allows("", "/anything")


def test_groups_for_the_same_agent_are_merged() -> None:
    txt = "User-agent: mm\nDisallow: /a\n\nUser-agent: other\nDisallow: /\n\nUser-agent: mm\nDisallow: /b\n"
    assert not allows(txt, "/a")
    assert not allows(txt, "/b")
    assert allows(txt, "/c")


def test_several_agents_share_a_group() -> None:
    txt = "User-agent: other\nUser-agent: mm\nDisallow: /shared\n"
    assert not allows(txt, "/shared")


def test_rules_before_any_user_agent_are_ignored_and_comments_stripped() -> None:
    txt = "Disallow: /\n# a comment\nUser-agent: * # all\nDisallow: /x # not /\nSitemap: /s.xml\n"
    assert allows(txt, "/")
    assert not allows(txt, "/x")


def test_longest_match_wins() -> None:
    txt = "User-agent: *\nDisallow: /docs\nAllow: /docs/public\nDisallow: /docs/public/secret\n"
    assert not allows(txt, "/docs/x")
    assert allows(txt, "/docs/public/page")
    assert not allows(txt, "/docs/public/secret/1")


def test_allow_wins_a_tie() -> None:
    txt = "User-agent: *\nDisallow: /page\nAllow: /page\n"
    assert allows(txt, "/page")
    txt = "User-agent: *\nAllow: /p*ge\nDisallow: /pa*e\n"  # same length
    assert allows(txt, "/page")


def test_wildcard() -> None:
    txt = "User-agent: *\nDisallow: /*.pdf\nDisallow: /a*b*c\n"
    assert not allows(txt, "/files/doc.pdf")
    assert not allows(txt, "/files/doc.pdf?download=1")
    assert not allows(txt, "/aXbYc")
    assert allows(txt, "/acb")


def test_dollar_anchors_the_end() -> None:
    txt = "User-agent: *\nDisallow: /*.php$\nDisallow: /exact$\n"
    assert not allows(txt, "/index.php")
    assert allows(txt, "/index.php?x=1")
    assert allows(txt, "/index.php5")
    assert not allows(txt, "/exact")
    assert allows(txt, "/exactly")


def test_dollar_not_at_the_end_is_literal() -> None:
    assert not allows("User-agent: *\nDisallow: /a$b\n", "/a$b")


def test_query_is_part_of_the_path() -> None:
    assert not allows("User-agent: *\nDisallow: /search?q=\n", "/search?q=x")
    assert allows("User-agent: *\nDisallow: /search?q=\n", "/search")


def test_empty_disallow_forbids_nothing() -> None:
    assert allows("User-agent: *\nDisallow:\n", "/x")


def test_percent_encoding_normalised() -> None:
    assert normalize("/foo/bar/ツ") == "/foo/bar/%E3%83%84"
    assert normalize("/foo/bar/%e3%83%84") == "/foo/bar/%E3%83%84"
    assert normalize("/foo/bar/%62%61%7A") == "/foo/bar/baz"
    assert normalize("/a%2fb") == "/a%2Fb"  # a reserved character stays encoded
    assert not allows("User-agent: *\nDisallow: /foo/bar/ツ\n", "/foo/bar/%E3%83%84")
    assert not allows("User-agent: *\nDisallow: /foo/%62az\n", "/foo/baz")
    assert not allows("User-agent: *\nDisallow: /%7Euser\n", "/~user/")


def test_robots_txt_itself_is_allowed() -> None:
    assert allows("User-agent: *\nDisallow: /\n", "/robots.txt")


def test_bom_and_crlf() -> None:
    assert not allows("\ufeffUser-agent: *\r\nDisallow: /x\r\n", "/x")


def test_origin() -> None:
    assert origin_of("HTTPS://User@Site.org:8443/a?b") == "https://site.org:8443"


def test_cache_expires_after_its_time() -> None:
    now = [0.0]
    cache = RobotsCache(ttl=100, clock=lambda: now[0])
    cache.put("https://a.org", Robots.parse("User-agent: *\nDisallow: /\n"))
    assert cache.get("https://a.org") is not None
    now[0] = 99.0
    assert cache.get("https://a.org") is not None
    now[0] = 100.0
    assert cache.get("https://a.org") is None


def test_cache_keeps_no_failure() -> None:
    cache = RobotsCache()
    cache.put("https://a.org", Robots(forbid_all="answered HTTP 503"))
    assert cache.get("https://a.org") is None


# --- against a real server -----------------------------------------------------------------


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, settings=Settings())


async def fetch(url: str, ctx: ToolContext, cache: RobotsCache | None = None) -> tuple[str, str]:
    tool = FetchContentTool(timeout=5, robots_cache=cache or RobotsCache())
    result = await tool.run(FetchContentArgs(url=url), ctx)
    return result.output, result.status


async def test_robots_read_before_the_page(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.page("/", PAGE)
        web.robots("User-agent: *\nAllow: /\n")
        assert await fetch(web.url("/"), ctx) == ("Hello\n", "ok")
        assert [hit.path for hit in web.requests] == ["/robots.txt", "/"]
        assert web.requests[0].headers["User-Agent"] == "mm/0.1.0"


@pytest.mark.parametrize(
    ("robots_txt", "allowed"),
    [
        ("User-agent: mm\nDisallow: /page\n", False),
        ("User-agent: *\nDisallow: /page\n", False),
        ("User-agent: *\nDisallow: /\nUser-agent: mm\nAllow: /\n", True),
        ("User-agent: *\nDisallow: /pa\nAllow: /pag\n", True),  # longest match
        ("User-agent: *\nDisallow: /page\nAllow: /page\n", True),  # tie
        ("User-agent: *\nDisallow: /*ge\n", False),  # wildcard
        ("User-agent: *\nDisallow: /pa$\n", True),  # $: /page is not /pa
        ("User-agent: *\nDisallow: /page$\n", False),
    ],
    ids=[
        "mm group",
        "star group",
        "mm over star",
        "longest",
        "tie",
        "wildcard",
        "dollar-miss",
        "dollar",
    ],
)
async def test_robots_variants(ctx: ToolContext, robots_txt: str, allowed: bool) -> None:
    with WebServer() as web:
        web.page("/page", PAGE)
        web.robots(robots_txt)
        output, status = await fetch(web.url("/page"), ctx)
        if allowed:
            assert (output, status) == ("Hello\n", "ok")
        else:
            assert (output, status) == (
                f"[fetch_content: error 2 (input) — {web.origin}/robots.txt forbids "
                f"{web.url('/page')} to mm]",
                "error",
            )
            assert web.hits("/page") == 0


async def test_robots_404_allows_everything(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.page("/", PAGE)  # no robots.txt route: 404
        assert await fetch(web.url("/"), ctx) == ("Hello\n", "ok")
        assert web.hits("/robots.txt") == 1


async def test_robots_500_forbids_everything(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.page("/", PAGE)
        web.robots("oops", status=500)
        assert await fetch(web.url("/"), ctx) == (
            f"[fetch_content: error 2 (input) — {web.origin}/robots.txt answered HTTP 500, so "
            f"every page of {web.origin} is treated as forbidden]",
            "error",
        )
        assert web.hits("/") == 0


async def test_robots_unreachable_forbids_everything(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.page("/", PAGE)
        web.route("/robots.txt", drop=True)
        output, status = await fetch(web.url("/"), ctx)
        assert status == "error"
        assert output.startswith(
            f"[fetch_content: error 2 (input) — {web.origin}/robots.txt cannot be read ("
        )
        assert output.endswith(f"), so every page of {web.origin} is treated as forbidden]")
        assert web.hits("/") == 0


async def test_redirect_into_a_disallowed_path(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.robots("User-agent: *\nDisallow: /private\n")
        web.redirect("/open", "/private/page")
        web.page("/private/page", PAGE)
        assert await fetch(web.url("/open"), ctx) == (
            f"[fetch_content: error 2 (input) — {web.origin}/robots.txt forbids "
            f"{web.url('/private/page')} to mm]",
            "error",
        )
        assert web.hits("/private/page") == 0


async def test_robots_of_the_redirect_target_origin(ctx: ToolContext) -> None:
    with WebServer() as first, WebServer() as second:
        first.redirect("/go", second.url("/page"))
        second.robots("User-agent: mm\nDisallow: /\n")
        second.page("/page", PAGE)
        output, _ = await fetch(first.url("/go"), ctx)
        assert output == (
            f"[fetch_content: error 2 (input) — {second.origin}/robots.txt forbids "
            f"{second.url('/page')} to mm]"
        )
        assert first.hits("/robots.txt") == 1 and second.hits("/robots.txt") == 1


async def test_robots_cached_per_origin(ctx: ToolContext) -> None:
    cache = RobotsCache()
    with WebServer() as web:
        web.page("/a", PAGE)
        web.page("/b", PAGE)
        web.robots("User-agent: *\nAllow: /\n")
        await fetch(web.url("/a"), ctx, cache)
        await fetch(web.url("/b"), ctx, cache)
        assert web.hits("/robots.txt") == 1


async def test_robots_redirect_followed(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.redirect("/robots.txt", "/real-robots.txt")
        web.route("/real-robots.txt", body=b"User-agent: *\nDisallow: /\n")
        web.page("/", PAGE)
        output, _ = await fetch(web.url("/"), ctx)
        assert output.endswith(f"robots.txt forbids {web.url('/')} to mm]")
