"""The fetch_content tool: a web page as clean Markdown, returned or saved to a file.

The steps are the package's modules: the arguments (url.py), the request with robots.txt
(request.py, robots.py), the encoding (encoding.py), the cleaning (clean.py) and the conversion
(markdown.py). Decoding, parsing and converting run in a thread (`asyncio.to_thread`): a 5 MiB
page takes a noticeable fraction of a second, and the window must keep drawing meanwhile.

What the model gets:

- the Markdown, ending with exactly one newline, truncated to maxOutput;
- with `output`: `[fetch_content: saved N lines of Markdown (B bytes) from <url> to <file> — the
  content is not shown]`, the file written in full (atomically: a temporary file renamed over
  the target), its folders created;
- `[fetch_content: <url> has no text content once scripts, navigation and ads are removed —
  nothing saved]` when nothing is left, and then no file is written;
- `[fetch_content: error N (<class>) — <reason>]` for every failure (errors.py).

mm's own additions, where the reference (docs/tools.md) says nothing:

- a page whose bytes are not text in the encoding it declares is read in the next one the
  order gives (encoding.py), and the result ends with a line saying so:
  `[fetch_content: <url> declares UTF-8, but its bytes are not UTF-8 text — read as windows-1251]`
  (after the Markdown, or after the confirmation with `output`; the file holds the Markdown only);
- a page left empty that has scripts is an application that builds its content in the
  browser: `[fetch_content: <url> needs JavaScript to show its content, and fetch_content runs no
  scripts — nothing saved]`, followed, when its `<noscript>` says something, by
  `what it shows without JavaScript (its <noscript>):` and that text as Markdown. Nothing is
  saved either way.

Choices where the reference is silent: `<url>` in these messages is the page's final URL, after
redirections (what was saved, and where relative links point); N counts the Markdown's lines
(its newlines); an existing output file keeps its mode; the permission box shows the URL and the
file's absolute path, and says when that file will be replaced.

The `output` file obeys the sandbox's policy as write_file does (`core/file_access.py`): outside
the folders mm may write, or in a denied item, the call fails before the page is fetched and
without asking, `[fetch_content: error 1 (conversion) — cannot write <file>: refused by mm's
sandbox: …]`.
"""

from __future__ import annotations

import asyncio
import os
import stat

from pydantic import ConfigDict, Field

from mm_tui.core.file_access import Gate, SandboxRefusal
from mm_tui.tools.args import ToolArgs
from mm_tui.tools.base import NothingToAsk, Tool, ToolContext, ToolResult, truncate
from mm_tui.tools.fetch.encoding import decode_page
from mm_tui.tools.fetch.errors import CONVERSION, USAGE, FetchError
from mm_tui.tools.fetch.markdown import Conversion, convert_page
from mm_tui.tools.fetch.request import MAX_BYTES, MAX_REDIRECTS, TIMEOUT, Fetcher, Page
from mm_tui.tools.fetch.robots import SHARED_CACHE, RobotsCache
from mm_tui.tools.fetch.url import check_base_url, repair_url
from mm_tui.tools.write_file import encode, file_gate

TABLE_MODES = ("html", "flatten")


class FetchContentArgs(ToolArgs):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    url: str = Field(
        description=(
            "The page. A missing scheme means https:// (example.com); only http and https."
        )
    )
    output: str = Field(
        "",
        description=(
            "File to save the Markdown to, relative to the working directory; folders are "
            "created. When set, the Markdown is not returned, only a confirmation."
        ),
    )
    base_url: str = Field(
        "",
        alias="baseUrl",
        description=(
            "Absolute URL to resolve relative links and images against. Default: the page's "
            "final URL, after redirections."
        ),
    )
    tables: str = Field(
        "html",
        description=(
            'Tables with rowspan/colspan or a nested table: "html" keeps them as HTML, '
            '"flatten" makes a Markdown table, copying a spanned cell into every slot it covers.'
        ),
        json_schema_extra={"enum": list(TABLE_MODES)},
    )
    strikethrough: bool = Field(
        False, description="Write <del>, <s>, <strike> as ~~text~~; otherwise as plain text."
    )
    task_list: bool = Field(
        False,
        alias="taskList",
        description=(
            "Write a list item starting with a checkbox as - [ ] / - [x]; otherwise the "
            "checkbox is dropped."
        ),
    )


def _to_markdown(
    page: Page, base_url: str, args: FetchContentArgs
) -> tuple[Conversion, str | None]:
    """The page converted, and the note to add when it was not read in the encoding it
    declares."""
    decoded = decode_page(page.body, page.content_type, page.url)
    try:
        conversion = convert_page(
            decoded.text,
            base_url=base_url or page.url,
            tables=args.tables,
            strikethrough=args.strikethrough,
            task_list=args.task_list,
        )
    except Exception as exc:  # noqa: BLE001 - a page no rule foresaw is still not a crash
        raise FetchError(CONVERSION, f"{page.url} cannot be converted: {exc!r}") from None
    return conversion, decoded.note(page.url)


def _noted(text: str, note: str | None) -> str:
    """`text` with `note` on a line of its own after it; a text ending with a newline still
    ends with one."""
    if note is None:
        return text
    return f"{text}{note}\n" if text.endswith("\n") else f"{text}\n{note}"


def _empty(url: str, conversion: Conversion) -> str:
    if not conversion.scripted:
        return (
            f"[fetch_content: {url} has no text content once scripts, navigation and ads are "
            "removed — nothing saved]"
        )
    text = (
        f"[fetch_content: {url} needs JavaScript to show its content, and fetch_content runs no "
        "scripts — nothing saved]"
    )
    if conversion.noscript:
        text += f"\nwhat it shows without JavaScript (its <noscript>):\n{conversion.noscript}"
    return text


def _check_output(gate: Gate, output: str) -> None:
    """Raises `SandboxRefusal` when the sandbox's policy refuses writing `output` (before the
    page is fetched, and before any permission is asked); a folder yet to be made is fine,
    and any other failure is left to the write, which says it."""
    try:
        with gate.place(output, write=True):
            pass
    except SandboxRefusal:
        raise
    except OSError:
        pass


def _save(gate: Gate, output: str, content: str) -> None:
    """Written as write_file writes: through a temporary file renamed over the target, never
    half a file; through a symbolic link, the file it points to, the link kept; under the
    sandbox's policy, race-free (`core/file_access.py`)."""
    with gate.place(output, write=True, make_folders=True) as place:
        mode: int | None = None
        if place.exists:
            mode = stat.S_IMODE(os.stat(place.name, dir_fd=place.folder).st_mode)
        place.write(encode(content), mode)


class FetchContentTool(Tool):
    name = "fetch_content"
    kind = "fetch"
    counter = None
    Args = FetchContentArgs

    def __init__(
        self,
        *,
        timeout: float = TIMEOUT,
        robots_cache: RobotsCache | None = None,
        max_bytes: int = MAX_BYTES,
        max_redirects: int = MAX_REDIRECTS,
    ) -> None:
        """The defaults are docs/tools.md's; tests shorten the timeout rather than wait 30 s."""
        self.fetcher = Fetcher(
            timeout=timeout,
            robots=robots_cache if robots_cache is not None else SHARED_CACHE,
            max_bytes=max_bytes,
            max_redirects=max_redirects,
        )

    def description(self) -> str:
        return (
            "Download a web page and return it as clean Markdown: scripts, navigation, ads and "
            "cookie banners removed, links made absolute. With `output`, the Markdown is saved "
            "to that file instead of being returned. Honours robots.txt; HTML pages only, up to "
            "5 MiB."
        )

    def title(self, args: FetchContentArgs) -> str:
        return f"{args.url} → {args.output}" if args.output else args.url

    def display(self, args: FetchContentArgs) -> str:
        return f"🌐 fetch_content: {self.title(args)}"

    def needs_permission(self, args: FetchContentArgs) -> bool:
        return bool(args.output)

    def locations(self, args: FetchContentArgs, ctx: ToolContext) -> tuple[str, ...]:
        return (ctx.location(args.output),) if args.output else ()

    async def permission_details(self, args: FetchContentArgs, ctx: ToolContext) -> str:
        if not args.output:
            return args.url
        try:
            await asyncio.to_thread(_check_output, file_gate(ctx), args.output)
        except SandboxRefusal:
            raise NothingToAsk from None  # refused whatever the person says: nothing to ask
        path = ctx.location(args.output)
        details = f"fetch {args.url}\nsave the Markdown to {path}"
        if os.path.isfile(path):
            details += "\n(the file exists: it will be replaced)"
        return details

    async def run(self, args: FetchContentArgs, ctx: ToolContext) -> ToolResult:
        try:
            url = repair_url(args.url)
            if args.tables not in TABLE_MODES:
                raise FetchError(USAGE, f'tables must be "html" or "flatten", not "{args.tables}"')
            base_url = check_base_url(args.base_url)
            if args.output and ctx.resolve(args.output).is_dir():  # known before fetching
                raise FetchError(CONVERSION, f"cannot write {args.output}: it is a directory")
            gate = file_gate(ctx)
            if args.output:
                await asyncio.to_thread(_check_output, gate, args.output)
            page = await self.fetcher.fetch(url)
            conversion, note = await asyncio.to_thread(_to_markdown, page, base_url, args)
            markdown = conversion.markdown
            if not markdown:
                empty = truncate(_empty(page.url, conversion), ctx.settings.max_output)
                return ToolResult(_noted(empty, note))
            if not args.output:
                return ToolResult(_noted(truncate(markdown, ctx.settings.max_output), note))
            try:
                await asyncio.to_thread(_save, gate, args.output, markdown)
            except SandboxRefusal:
                raise
            except OSError as exc:
                raise FetchError(
                    CONVERSION, f"cannot write {args.output}: {exc.strerror or exc}"
                ) from None
        except SandboxRefusal as exc:
            return ToolResult(
                FetchError(CONVERSION, f"cannot write {args.output}: {exc.reason}").message,
                status="error",
            )
        except FetchError as exc:
            return ToolResult(exc.message, status="error")
        lines = markdown.count("\n")
        size = len(markdown.encode("utf-8", errors="replace"))
        return ToolResult(
            _noted(
                f"[fetch_content: saved {lines} lines of Markdown ({size} bytes) from {page.url} "
                f"to {args.output} — the content is not shown]",
                note,
            )
        )
