"""The fetch_content tool as the engine sees it: its declaration, how it is shown, what it asks,
its usage errors and every message it returns, to the letter."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.fetch_server import WebServer

from mm_tui.config import Settings
from mm_tui.tools.base import ToolContext
from mm_tui.tools.fetch import FetchContentArgs, FetchContentTool
from mm_tui.tools.fetch.robots import RobotsCache
from mm_tui.tools.fetch.url import repair_url
from mm_tui.tools.registry import ToolRegistry

PAGE = "<html><head><title>T</title></head><body><nav>menu</nav><h1>Title</h1><p>One</p><p>Two</p></body></html>"
EMPTY = "<html><head><script>x()</script></head><body><nav><a href='/'>home</a></nav></body></html>"


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, settings=Settings())


def tool() -> FetchContentTool:
    return FetchContentTool(timeout=5, robots_cache=RobotsCache())


async def run(ctx: ToolContext, **args: object):
    return await tool().run(FetchContentArgs.model_validate(args), ctx)


# --- declaration and display ---------------------------------------------------------------


def test_declared_only_with_the_flag(tmp_path: Path) -> None:
    assert "fetch_content" not in ToolRegistry.from_settings(Settings(), tmp_path).names
    on = Settings.model_validate({"fetchContentTool": True})
    registry = ToolRegistry.from_settings(on, tmp_path)
    assert "fetch_content" in registry.names
    assert isinstance(registry.get("fetch_content"), FetchContentTool)


def test_declaration() -> None:
    params = FetchContentTool().parameters()
    assert params["required"] == ["url"]
    assert list(params["properties"]) == [
        "url",
        "output",
        "baseUrl",
        "tables",
        "strikethrough",
        "taskList",
    ]
    assert params["properties"]["tables"]["enum"] == ["html", "flatten"]
    assert all(p["description"] for p in params["properties"].values())


def test_arguments_by_their_json_names(tmp_path: Path) -> None:
    registry = ToolRegistry.from_settings(
        Settings.model_validate({"fetchContentTool": True}), tmp_path
    )
    parsed = registry.parse(
        "fetch_content",
        json.dumps({"url": "k33g.org", "baseUrl": "https://b.org/", "taskList": True, "extra": 1}),
    )
    assert not isinstance(parsed, str)
    _, args = parsed
    assert (args.url, args.base_url, args.task_list, args.tables) == (
        "k33g.org",
        "https://b.org/",
        True,
        "html",
    )


def test_attributes_without_output(ctx: ToolContext) -> None:
    t = FetchContentTool()
    args = FetchContentArgs(url="https://k33g.org/blog")
    assert (t.name, t.kind, t.counter) == ("fetch_content", "fetch", None)
    assert t.title(args) == "https://k33g.org/blog"
    assert t.display(args) == "🌐 fetch_content: https://k33g.org/blog"
    assert t.needs_permission(args) is False
    assert t.locations(args, ctx) == ()
    assert t.rejection() == "[fetch_content rejected by the user]"


async def test_attributes_with_output(ctx: ToolContext, tmp_path: Path) -> None:
    t = FetchContentTool()
    args = FetchContentArgs(url="k33g.org", output="notes/page.md")
    assert t.title(args) == "k33g.org → notes/page.md"
    assert t.display(args) == "🌐 fetch_content: k33g.org → notes/page.md"
    assert t.needs_permission(args) is True
    assert t.locations(args, ctx) == (str(tmp_path / "notes/page.md"),)
    assert await t.permission_details(args, ctx) == (
        f"fetch k33g.org\nsave the Markdown to {tmp_path / 'notes/page.md'}"
    )
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes/page.md").write_text("old")
    assert await t.permission_details(args, ctx) == (
        f"fetch k33g.org\nsave the Markdown to {tmp_path / 'notes/page.md'}\n"
        "(the file exists: it will be replaced)"
    )


def test_constructor_defaults_are_the_reference() -> None:
    fetcher = FetchContentTool().fetcher
    assert (fetcher.timeout, fetcher.max_bytes, fetcher.max_redirects) == (
        30.0,
        5 * 1024 * 1024,
        10,
    )


# --- URL repair and usage errors -----------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "url"),
    [
        ("k33g.org", "https://k33g.org"),
        ("  k33g.org/blog?x=1 ", "https://k33g.org/blog?x=1"),
        ("https//k33g.org", "https://k33g.org"),
        ("http//k33g.org/a", "http://k33g.org/a"),
        ("https:/k33g.org", "https://k33g.org"),
        ("HTTPS//k33g.org", "HTTPS://k33g.org"),
        ("//k33g.org/x", "https://k33g.org/x"),
        ("localhost:8080/x", "https://localhost:8080/x"),
        ("http://127.0.0.1:9/", "http://127.0.0.1:9/"),
    ],
)
def test_url_repair(raw: str, url: str) -> None:
    assert repair_url(raw) == url


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        ({"url": ""}, "the url is empty"),
        ({"url": "   "}, "the url is empty"),
        (
            {"url": "ftp://k33g.org"},
            '"ftp://k33g.org" is not a web address: only http and https are fetched',
        ),
        (
            {"url": "mailto:me@k33g.org"},
            '"mailto:me@k33g.org" is not a web address: only http and https are fetched',
        ),
        (
            {"url": "javascript:alert(1)"},
            '"javascript:alert(1)" is not a web address: only http and https are fetched',
        ),
        (
            {"url": "file:///etc/passwd"},
            '"file:///etc/passwd" is not a web address: only http and https are fetched',
        ),
        ({"url": "https://"}, '"https://" has no host name'),
        (
            {"url": "https://k33g.org:99999/"},
            '"https://k33g.org:99999/" is not a valid URL: Port out of range 0-65535',
        ),
        ({"url": "k33g.org", "tables": "grid"}, 'tables must be "html" or "flatten", not "grid"'),
        (
            {"url": "k33g.org", "baseUrl": "/docs/"},
            'baseUrl must be an absolute URL such as https://example.com/docs/, not "/docs/"',
        ),
        (
            {"url": "k33g.org", "baseUrl": "k33g.org/docs"},
            'baseUrl must be an absolute URL such as https://example.com/docs/, not "k33g.org/docs"',
        ),
    ],
)
async def test_usage_errors(ctx: ToolContext, args: dict[str, object], reason: str) -> None:
    result = await run(ctx, **args)
    assert result.status == "error"
    assert result.output == f"[fetch_content: error 3 (usage) — {reason}]"


# --- results -------------------------------------------------------------------------------


async def test_markdown_returned(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.page("/", PAGE)
        result = await run(ctx, url=web.url("/"))
        assert (result.output, result.status) == ("# Title\n\nOne\n\nTwo\n", "ok")


# The shapes of real pages that lost their article: a news site's layout classes, a
# Sphinx page's section ids, a link opening a popup, a text laid out in a one-cell table, code
# in a table cell, a bold label followed by a no-break space.
REAL_SHAPES = (
    "<html><head><title>T</title></head><body>"
    '<nav class="site-nav"><a href="/">Home</a></nav>'
    '<div class="l-root"><div class="l-sidebar-fixed"><div class="c-entry-content">'
    "<p><b>Note:&nbsp;</b>the whole article, with "
    '<a class="popup" href="/glossary">a word</a> explained.</p></div>'
    '<aside class="sidebar">Related</aside></div></div>'
    '<div class="section" id="sharing-with-a-single-developer"><h2>Sharing</h2>'
    "<p>Alice pushes.</p></div>"
    "<table><tr><td><h3>Chapter</h3><p>A text laid out in a table.</p></td></tr></table>"
    "<table><tr><th>Call</th><th>Result</th></tr>"
    "<tr><td><pre>f(1)  // one\ng(2)</pre></td><td>3</td></tr></table>"
    '<div class="ad">Buy now</div></body></html>'
)


async def test_real_page_shapes_keep_their_content(ctx: ToolContext) -> None:
    with WebServer() as web:
        web.page("/", REAL_SHAPES)
        result = await run(ctx, url=web.url("/"))
    assert result.status == "ok"
    assert result.output == (
        "**Note:**\xa0the whole article, with "
        f"[a word]({web.url('/glossary')}) explained.\n\n"
        "## Sharing\n\nAlice pushes.\n\n"
        "### Chapter\n\nA text laid out in a table.\n\n"
        "| Call | Result |\n| --- | --- |\n| `f(1)  // one`<br>`g(2)` | 3 |\n"
    )


async def test_markdown_truncated_to_max_output(tmp_path: Path) -> None:
    ctx = ToolContext(cwd=tmp_path, settings=Settings.model_validate({"maxOutput": 12}))
    with WebServer() as web:
        web.page("/", PAGE)
        result = await run(ctx, url=web.url("/"))
        assert result.output == "# Title\n\nOne\n[... output truncated: 6 more characters ...]"


async def test_saved_to_a_file(ctx: ToolContext, tmp_path: Path) -> None:
    with WebServer() as web:
        web.redirect("/old", "/")
        web.page("/", PAGE)
        result = await run(ctx, url=web.url("/old"), output="deep/er/page.md")
        assert (tmp_path / "deep/er/page.md").read_text() == "# Title\n\nOne\n\nTwo\n"
        assert result.status == "ok"
        assert result.output == (
            f"[fetch_content: saved 5 lines of Markdown (18 bytes) from {web.url('/')} to "
            "deep/er/page.md — the content is not shown]"
        )


async def test_saved_file_not_truncated_and_replaces(tmp_path: Path) -> None:
    ctx = ToolContext(cwd=tmp_path, settings=Settings.model_validate({"maxOutput": 5}))
    target = tmp_path / "page.md"
    target.write_text("old content")
    os.chmod(target, 0o640)
    with WebServer() as web:
        web.page("/", "<p>é" + "x" * 100 + "</p>")
        result = await run(ctx, url=web.url("/"), output="page.md")
        assert target.read_text() == "é" + "x" * 100 + "\n"
        assert result.output.startswith(
            "[fetch_content: saved 1 lines of Markdown (103 bytes) from"
        )
        assert os.stat(target).st_mode & 0o777 == 0o640
        assert [p.name for p in tmp_path.iterdir()] == ["page.md"]  # no temporary file left


async def test_no_content_left(ctx: ToolContext, tmp_path: Path) -> None:
    with WebServer() as web:
        web.page("/", EMPTY)
        result = await run(ctx, url=web.url("/"), output="page.md")
        assert result.output == (
            f"[fetch_content: {web.url('/')} has no text content once scripts, navigation and "
            "ads are removed — nothing saved]"
        )
        assert not (tmp_path / "page.md").exists()
        result = await run(ctx, url=web.url("/"))
        assert result.output.endswith(
            "has no text content once scripts, navigation and ads are removed — nothing saved]"
        )


async def test_output_cannot_be_written(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    with WebServer() as web:
        web.page("/", PAGE)
        result = await run(ctx, url=web.url("/"), output="taken")
        assert result.status == "error"
        assert result.output == (
            "[fetch_content: error 1 (conversion) — cannot write taken: it is a directory]"
        )
        assert web.hits("/") == 0
        (tmp_path / "file").write_text("x")
        result = await run(ctx, url=web.url("/"), output="file/below.md")
        assert result.output.startswith(
            "[fetch_content: error 1 (conversion) — cannot write file/below.md: "
        )


async def test_conversion_runs_off_the_event_loop(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from mm_tui.tools.fetch import tool as tool_module

    seen: list[str] = []
    original = tool_module.convert_page

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(threading.current_thread().name)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tool_module, "convert_page", spy)
    with WebServer() as web:
        web.page("/", PAGE)
        await run(ctx, url=web.url("/"))
    assert seen and seen[0] != threading.main_thread().name


async def test_saved_through_a_symbolic_link(ctx: ToolContext, tmp_path: Path) -> None:
    real = tmp_path / "real.md"
    real.write_text("old")
    (tmp_path / "link.md").symlink_to(real)
    with WebServer() as web:
        web.page("/", PAGE)
        await run(ctx, url=web.url("/"), output="link.md")
    assert (tmp_path / "link.md").is_symlink()
    assert real.read_text() == "# Title\n\nOne\n\nTwo\n"


# --- a page that scripts fill ---------------------------------------------------------------

SHELL = (
    '<!doctype html><html><head><script defer src="/static/js/main.4f2a.js"></script></head>'
    '<body>{noscript}<div id="root"></div></body></html>'
)


def needs_javascript(url: str) -> str:
    return (
        f"[fetch_content: {url} needs JavaScript to show its content, and fetch_content runs no "
        "scripts — nothing saved]"
    )


async def test_an_application_shell_needs_javascript(ctx: ToolContext, tmp_path: Path) -> None:
    with WebServer() as web:
        web.page("/", SHELL.format(noscript=""))
        result = await run(ctx, url=web.url("/"), output="app.md")
        assert result.output == needs_javascript(web.url("/"))
        assert not (tmp_path / "app.md").exists()
        assert (await run(ctx, url=web.url("/"))).output == needs_javascript(web.url("/"))


async def test_an_application_shell_keeps_its_noscript_text(ctx: ToolContext) -> None:
    noscript = (
        "<noscript>You need to enable JavaScript to run this app. Or read the "
        '<a href="/basic">basic version</a>.</noscript>'
    )
    with WebServer() as web:
        web.page("/app/", SHELL.format(noscript=noscript))
        result = await run(ctx, url=web.url("/app/"))
        assert result.output == (
            needs_javascript(web.url("/app/"))
            + "\nwhat it shows without JavaScript (its <noscript>):\n"
            + f"You need to enable JavaScript to run this app. Or read the [basic version]({web.url('/basic')}).\n"
        )
