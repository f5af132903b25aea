"""Small text helpers every front end and the engine share: cutting a text to a length with an
ellipsis, and the names of agents (`<agent> · <title>` for an asked agent's call, the header
`mm [title] · model @ provider`).

Lengths are counted in characters, not terminal cells: these texts go into titles, notices and
messages to a model, where a fixed number of characters is what is wanted; the window, which
fits text to cells, cuts with Rich's own measures."""

from __future__ import annotations

ELLIPSIS = "…"
AGENT_SEPARATOR = " · "


def ellipsize(text: str, limit: int, *, strip: bool = False) -> str:
    """`text` in at most `limit` characters: a longer one keeps its first `limit - 1` and ends
    with `…`. `strip`: the spaces the cut leaves at the end go too, so that the `…` follows a
    word (the skills catalogue, in a tool description a model reads); the result is then
    shorter than `limit`."""
    if len(text) <= limit:
        return text
    kept = text[: limit - 1]
    return (kept.rstrip() if strip else kept) + ELLIPSIS


def one_line(text: str, limit: int) -> str:
    """`text` on one line, every run of whitespace (newlines too) made one space, then cut to
    `limit` characters as `ellipsize` cuts."""
    return ellipsize(" ".join(text.split()), limit)


def agent_title(agent: str | None, title: str) -> str:
    """A tool call's title as shown: `<agent> · <title>` for a call of an asked agent, the
    title alone for this agent's own calls (`agent` None or empty)."""
    return f"{agent}{AGENT_SEPARATOR}{title}" if agent else title


def strip_agent(title: str, agent: str) -> str:
    """The title `agent_title` made for `agent`, without the agent's name."""
    return title.removeprefix(f"{agent}{AGENT_SEPARATOR}")


def agent_name(title: str) -> str:
    """An agent as its header and its answers name it: `mm [title]`."""
    return f"mm [{title}]"


def agent_header(
    title: str, model: str, provider: str, asked_by: str | None = None
) -> tuple[str, str]:
    """The line that names an agent, `mm [title] · model @ provider` (` · asked by <agent>` for
    an asked one), in every front end: the window's header and an asked agent's, line mode's
    banner. Two parts: the name, which the front ends show in bold, and the rest."""
    rest = f"{AGENT_SEPARATOR}{model} @ {provider}"
    if asked_by:
        rest += f"{AGENT_SEPARATOR}asked by {asked_by}"
    return agent_name(title), rest


def counted(count: int, noun: str) -> str:
    """`1 line`, `2 lines`, `0 lines`: a count with its noun in the right number (English
    nouns of mm's messages, which all take an s)."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"
