"""Content between ACP and mm: a prompt's blocks as the model's text, and mm's text, diffs and
tool kinds as ACP content.

File changes as ACP diff content: write_file and edit_file give the engine a unified diff
(3 lines of context), never the whole file. The diff is parsed (the `unidiff` package) and each
hunk becomes one diff content for the file's absolute path, `oldText` the hunk's context and
removed lines, `newText` its context and added lines; a created file is one diff content with no
`oldText` and the whole new text. Reading the file instead would cost two whole-file reads per
edit (edit_file handles 50 MB files), and would race with the write; the hunks are what was
changed, computed once, and the same parsing serves the permission request (whose details are
the diff of the change to come) and the finished call.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import acp
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    FileEditToolCallContent,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)
from unidiff.patch import PatchSet

ACP_KINDS = {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"}


def acp_kind(kind: str) -> str:
    return kind if kind in ACP_KINDS else "other"


def single_path(paths: tuple[str, ...]) -> str | None:
    return paths[0] if len(paths) == 1 else None


def message_chunk(text: str, extra: dict[str, Any] | None) -> AgentMessageChunk:
    return AgentMessageChunk(
        session_update="agent_message_chunk", content=acp.text_block(text), field_meta=extra
    )


def thought_chunk(text: str, extra: dict[str, Any] | None) -> AgentThoughtChunk:
    return AgentThoughtChunk(
        session_update="agent_thought_chunk", content=acp.text_block(text), field_meta=extra
    )


def text_content(text: str) -> Any:
    return acp.tool_content(acp.text_block(text))


def diff_contents(unified: str, path: str | None, cwd: Path) -> list[FileEditToolCallContent]:
    """ACP diff contents for a unified diff: one per hunk (`oldText` its context and removed
    lines, `newText` its context and added lines), or one with the whole text and no `oldText`
    for a created file. `path` is the file's absolute path when the call knows it; otherwise the
    diff's own path, against `cwd`. Text that is not a diff (a refusal, "unchanged") gives none."""
    if not unified.startswith("--- "):
        return []
    try:
        patch = PatchSet(unified)
    except Exception:  # noqa: BLE001 - not a diff after all
        return []
    out: list[FileEditToolCallContent] = []
    for patched in patch:
        target = path
        if target is None:
            name = patched.target_file.removeprefix("b/")
            target = os.path.abspath(cwd / name)
        if patched.is_added_file:
            new = [_hunk_texts(h)[1] for h in patched]
            out.append(acp.tool_diff_content(target, "".join(new), None))
            continue
        for hunk in patched:
            old, new_text = _hunk_texts(hunk)
            out.append(acp.tool_diff_content(target, new_text, old))
    return out


def _hunk_texts(hunk: Any) -> tuple[str, str]:
    """The old and new text of one hunk; `\\ No newline at end of file` takes the newline off
    the line before it, on the side that line belongs to."""
    old: list[str] = []
    new: list[str] = []
    last = " "
    for line in hunk:
        kind, value = line.line_type, line.value
        if kind == "\\":
            for side, applies in ((old, last in " -"), (new, last in " +")):
                if applies and side and side[-1].endswith("\n"):
                    side[-1] = side[-1][:-1]
            continue
        if kind in " -":
            old.append(value)
        if kind in " +":
            new.append(value)
        last = kind
    return "".join(old), "".join(new)


def prompt_text(blocks: list[Any]) -> str:
    """A prompt's blocks as the one text the model reads. A mentioned file (a resource link or
    an embedded resource) stays in the sentence as `@path`; an embedded resource's text follows
    the request in a `<context>` block. Images and audio are refused: mm's models read text."""
    parts: list[str] = []
    contexts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"@{_uri_path(block.uri)}")
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            parts.append(f"@{_uri_path(resource.uri)}")
            if isinstance(resource, TextResourceContents):
                contexts.append(f'<context ref="{resource.uri}">\n{resource.text}\n</context>')
            else:
                contexts.append(
                    f'<context ref="{resource.uri}">(binary content left out)</context>'
                )
        elif isinstance(block, ImageContentBlock | AudioContentBlock):
            what = "an image" if isinstance(block, ImageContentBlock) else "audio"
            raise acp.RequestError.invalid_params(
                {"message": f"mm reads text only: this prompt holds {what}, which it cannot use"}
            )
    text = "".join(parts)
    if contexts:
        text = "\n\n".join([text, *contexts])
    return text


def _uri_path(uri: str) -> str:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri
