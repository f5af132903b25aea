"""A whole JSON completion, from a request sent without streaming or a server that ignores
`stream: true`: read as the chunks a stream would have given."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from mm_tui.engine.chunk_assembly import completion_chunks
from mm_tui.engine.model_stream import ModelChunk, ModelError
from mm_tui.engine.server_errors import reported_error

if TYPE_CHECKING:
    import httpx


def from_completion(
    body: bytes, base_url: str, next_call_id: Callable[[], str]
) -> list[ModelChunk]:
    """The chunks of a whole completion; ModelError for a body that is none."""
    try:
        data = json.loads(body) if body.strip() else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ModelError(
            f"the model server at {base_url} answered with "
            + ("an empty body" if not body.strip() else "something that is not JSON")
        )
    if "error" in data and not data.get("choices"):
        raise reported_error(body)
    return completion_chunks(data, next_call_id)


def is_json(resp: httpx.Response) -> bool:
    """An answer in one JSON piece, from a server that ignores `stream: true`."""
    return resp.headers.get("content-type", "").split(";")[0].strip().lower() == "application/json"
