"""A scripted OpenAI-compatible server that really listens on 127.0.0.1 and streams real SSE.

Model traffic is tested against real sockets, not mocks of httpx, because the bugs worth catching
live in the bytes: events split across TCP reads, CRLF line ends, keep-alive comments, UTF-8
characters cut in half, a connection dropped mid-answer, a server that goes silent. The server runs
in a background thread (a `ThreadingHTTPServer`), so the same object serves an async pytest test in
this process and an `mm -p` started as a subprocess.

    with ScriptedServer() as server:
        server.script(
            Reply(tool_calls=[call("bash", {"command": "ls"})]),   # first request
            Reply("There are two files."),                           # second request
        )
        ... point the client at server.base_url ...
        assert server.requests[1].messages[-1]["role"] == "tool"

A response is one of:

- a list of chunk dicts (built with `text_chunks`, `tool_call_chunks`, `reasoning_chunks`,
  `finish_chunk`, `usage_chunk`...): streamed as SSE and closed with `data: [DONE]`;
- `SSE(chunks, ...)`: the same with knobs: delay between writes, no [DONE], `drop_after` N events
  (close the connection), `silence_after` N events (hang until the server closes), chunked or
  connection-close framing;
- `Raw(pieces)`: bytes written exactly, one write per piece with a small delay, for awkward splits;
- `Error(status, message, headers=...)`: an HTTP error with an OpenAI-style error body;
- `EmptyBody()`: HTTP 200 with an empty body (llama-cpp-python's answer to a streamed request
  that carries tools);
- `Completion(...)`: a non-streamed JSON completion (what a `stream: false` request expects);
- `Reply(...)`: text, reasoning and tool calls that become SSE or a JSON completion depending on
  the request's `stream` flag; the easy way to script a conversation (a plain str is short for
  `Reply(text)`).

When the script is empty the server answers with `on_empty(request)`, by default the text "ok".

A context window, enforced and served, for the code that learns the window from the server:

- `context_window=N` refuses a chat request that does not fit in N tokens with the HTTP 400 the
  server named by `context_style` really sends (same body shape, same wording), instead of the
  scripted answer; the refused request is recorded in `requests` but does not use up the script.
  Styles, and their rule:
  "llama-cpp-python" (`{"error": {"message": "This model's maximum context length is N tokens.
  However, you requested ...", "type": "invalid_request_error", "param": "messages", "code":
  "context_length_exceeded"}}`; the prompt alone counts: refused when prompt >= N),
  "llama.cpp" (`{"error": {"code": 400, "message": "request (P tokens) exceeds the available
  context size (N tokens), try increasing it", "type": "exceed_context_size_error",
  "n_prompt_tokens": P, "n_ctx": N}}`; prompt >= N),
  "vllm" (`{"error": {"message": "This model's maximum context length is N tokens. However, you
  requested O output tokens and your prompt contains at least ...", "type": "BadRequestError",
  "param": "input_tokens", "code": 400}}`; prompt + requested output > N),
  "openai" (`... "However, your messages resulted in P tokens ..." / "you requested T tokens (P in
  the messages, O in the completion)"`, code "context_length_exceeded"; prompt + output > N),
  "lmstudio" (`{"error": "Trying to keep the first P tokens when context the overflows. However,
  the model is loaded with context length of only N tokens, ..."}`; prompt >= N).
  Tokens are counted by `scripted_prompt_tokens(body)` (the compact JSON of `messages`, and of
  `tools` when there are some, in characters, divided by 4 and rounded up) and `scripted_tokens`
  (that plus `max_completion_tokens` or `max_tokens` when the request sets one). The default
  `context_style` is the server named by `serves` (Ollama refuses nothing: it cuts the prompt),
  else "llama-cpp-python".
- `report_usage=True` makes a `Reply` report `prompt_tokens = scripted_prompt_tokens(body)` (its
  completion figure stays): in the usage chunk of a stream that asked `stream_options.include_usage`
  (appended to a chunk list that has none) and in a non-streamed completion.
- `serves` answers the native endpoint that tells the window, at the server root (the base URL
  without `prefix`): "llama.cpp" (GET /props, per-slot `default_generation_settings.n_ctx`, and the
  whole context, `llama_slots` times bigger, as the older top-level `n_ctx`), "ollama" (POST
  /api/show with `model_info["llama.context_length"]` = `model_max` and, when `ollama_num_ctx` is
  set, `num_ctx` in `parameters`; GET /api/ps lists the model with `context_length` =
  `context_window` when `loaded`), "vllm" (the /models entries gain `max_model_len`), "lmstudio"
  (GET /api/v0/models with `max_context_length` = `model_max` and, when `loaded`,
  `loaded_context_length` = `context_window`). `model_max` defaults to `context_window`.
- `routes={("GET", "/props"): answer}` overrides any route but chat completions: a dict or list is
  sent as JSON, str or bytes as they are (status 200), an `Error` as its error, `Delayed(seconds,
  answer)` after a wait. Requests other than chat completions are recorded in `lookups`.

Run it by hand: `python tests/support/scripted_server.py "Hello there"` prints its base URL and answers
every request with that text.
"""

from __future__ import annotations

import json
import math
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "Call",
    "Completion",
    "Delayed",
    "EmptyBody",
    "Error",
    "Raw",
    "Received",
    "Reply",
    "SSE",
    "ScriptedServer",
    "call",
    "chunk",
    "closed_port_url",
    "context_error",
    "drop_after",
    "encode_sse",
    "finish_chunk",
    "interleave",
    "reasoning_chunks",
    "role_chunk",
    "scripted_prompt_tokens",
    "scripted_tokens",
    "silence_after",
    "split_bytes",
    "split_text",
    "text_chunks",
    "tool_call_chunks",
    "usage_chunk",
]

DEFAULT_MODEL = "scripted-model"


# --------------------------------------------------------------------------- chunk builders


def split_text(text: str, split: int | None) -> list[str]:
    """Pieces of `split` characters each (the whole text when `split` is None or 0)."""
    if not split or split <= 0 or len(text) <= split:
        return [text]
    return [text[i : i + split] for i in range(0, len(text), split)]


def chunk(delta: dict[str, Any] | None = None, finish_reason: str | None = None) -> dict[str, Any]:
    """One `chat.completion.chunk` with a single choice; the server fills in id, model, created."""
    return {"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}]}


def role_chunk() -> dict[str, Any]:
    """The opening chunk most servers send: the role and an empty content."""
    return chunk({"role": "assistant", "content": ""})


def text_chunks(text: str, split: int | None = None) -> list[dict[str, Any]]:
    """`delta.content` pieces of `split` characters (one chunk when `split` is None)."""
    return [chunk({"content": piece}) for piece in split_text(text, split)]


def reasoning_chunks(
    text: str, split: int | None = None, field: str = "reasoning_content"
) -> list[dict[str, Any]]:
    """Reasoning pieces; `field` is "reasoning_content" (DeepSeek, vLLM, llama.cpp) or
    "reasoning" (Ollama, OpenRouter)."""
    return [chunk({field: piece}) for piece in split_text(text, split)]


def tool_call_chunks(
    id: str | None,
    name: str,
    arguments: str | dict[str, Any],
    split: int | None = 1,
    index: int = 0,
) -> list[dict[str, Any]]:
    """One tool call the way OpenAI streams it: a first piece with id, type and name (and empty
    arguments), then the arguments in pieces of `split` characters. `id=None` leaves the id out,
    as some servers do."""
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    first: dict[str, Any] = {"index": index, "type": "function"}
    if id is not None:
        first["id"] = id
    first["function"] = {"name": name, "arguments": ""}
    out = [chunk({"tool_calls": [first]})]
    if arguments:
        for piece in split_text(arguments, split):
            out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    return out


def finish_chunk(reason: str | None = "stop") -> dict[str, Any]:
    return chunk({}, reason)


def usage_chunk(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    """The extra last chunk that `stream_options.include_usage` asks for: no choices, usage."""
    return {
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def interleave(*lists: Sequence[Any]) -> list[Any]:
    """Round-robin merge, for tool calls whose pieces arrive interleaved across indexes."""
    out: list[Any] = []
    longest = max((len(seq) for seq in lists), default=0)
    for i in range(longest):
        for seq in lists:
            if i < len(seq):
                out.append(seq[i])
    return out


def _full_chunk(obj: dict[str, Any], model: str) -> dict[str, Any]:
    if "choices" in obj and "object" not in obj:
        return {
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            **obj,
        }
    return obj


def encode_sse(
    chunks: Iterable[dict[str, Any] | str | bytes],
    done: bool = True,
    model: str = DEFAULT_MODEL,
    crlf: bool = False,
) -> list[bytes]:
    """Each chunk as one SSE event (`data: ...` and a blank line): a dict as JSON, a str as the
    data payload verbatim, bytes as they are. One element per event, then `data: [DONE]`."""
    events = []
    for item in chunks:
        if isinstance(item, bytes):
            events.append(item)
            continue
        payload = item if isinstance(item, str) else json.dumps(_full_chunk(item, model))
        events.append(f"data: {payload}\n\n".encode())
    if done:
        events.append(b"data: [DONE]\n\n")
    if crlf:
        events = [e.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n") for e in events]
    return events


def split_bytes(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    """`data` cut at the given offsets (out-of-range and repeated offsets are ignored)."""
    points = sorted({c for c in cuts if 0 < c < len(data)})
    out, start = [], 0
    for p in points:
        out.append(data[start:p])
        start = p
    out.append(data[start:])
    return out


# --------------------------------------------------------------------------- responses


@dataclass
class SSE:
    """A streamed answer. `drop_after`: close the connection after that many events (no [DONE]);
    `silence_after`: after that many events, send nothing more until the server closes.
    `chunked=False` frames the body with `Connection: close` instead of chunked encoding."""

    chunks: Sequence[dict[str, Any] | str | bytes] = ()
    done: bool = True
    delay: float = 0.0
    drop_after: int | None = None
    silence_after: int | None = None
    chunked: bool = True
    crlf: bool = False
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


def drop_after(n: int, chunks: Sequence[dict[str, Any] | str | bytes], **kw: Any) -> SSE:
    """Stream `n` events of `chunks`, then close the connection."""
    return SSE(chunks, drop_after=n, **kw)


def silence_after(
    n: int = 0, chunks: Sequence[dict[str, Any] | str | bytes] = (), **kw: Any
) -> SSE:
    """Send the headers and `n` events, then hang until the server closes (`n=0`: silence right
    after the headers)."""
    return SSE(chunks, silence_after=n, **kw)


@dataclass
class Raw:
    """Bytes written exactly as given: one write per piece, `delay` seconds apart, so that each
    piece arrives as its own TCP read. `drop=True` closes the connection without ending the body."""

    pieces: Sequence[bytes] | bytes
    delay: float = 0.005
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/event-stream"})
    chunked: bool = True
    drop: bool = False


@dataclass
class Error:
    """An HTTP error. The body is `{"error": {"message": ...}}` unless `body` is given (a dict is
    sent as JSON, a str or bytes as they are)."""

    status: int
    message: str = "scripted error"
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None


@dataclass
class EmptyBody:
    """HTTP 200 and nothing else: llama-cpp-python's answer to a streamed request with tools.
    `then_close`: as llama-cpp-python does, the connection is closed after it, though kept alive
    by the headers; a next request sent on it is read and gets no answer."""

    chunked: bool = False
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/event-stream"})
    then_close: bool = False


@dataclass(frozen=True)
class Call:
    name: str
    arguments: str
    id: str | None = None


def call(name: str, arguments: dict[str, Any] | str | None = None, id: str | None = None) -> Call:
    """A tool call for `Reply` and `Completion`; a dict of arguments is dumped to JSON."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return Call(name, arguments, id)


def _call_id(c: Call, i: int, seq: int) -> str:
    return c.id if c.id is not None else f"call_s{seq}_{i}"


@dataclass
class Completion:
    """A non-streamed chat completion. `body` replaces the whole JSON when given."""

    content: str | None = "ok"
    tool_calls: Sequence[Call] = ()
    reasoning: str | None = None
    reasoning_field: str = "reasoning_content"
    finish_reason: str | None = None
    usage: tuple[int, int] | None = (10, 5)
    body: Any = None
    status: int = 200

    def to_json(self, model: str = DEFAULT_MODEL, seq: int = 0) -> Any:
        if self.body is not None:
            return self.body
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.reasoning is not None:
            message[self.reasoning_field] = self.reasoning
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": _call_id(c, i, seq),
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for i, c in enumerate(self.tool_calls)
            ]
        finish = self.finish_reason or ("tool_calls" if self.tool_calls else "stop")
        out: dict[str, Any] = {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if self.usage is not None:
            p, c = self.usage
            out["usage"] = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
        return out


@dataclass
class Reply:
    """One model answer that adapts to the request: SSE chunks when it asked for a stream, a JSON
    completion otherwise. `split` cuts text, reasoning and arguments into pieces of that many
    characters. Tool calls without an id get `call_s<request>_<i>`, unique within a server."""

    text: str | None = None
    tool_calls: Sequence[Call] = ()
    reasoning: str | None = None
    reasoning_field: str = "reasoning_content"
    split: int | None = 4
    usage: tuple[int, int] | None = (10, 5)
    finish_reason: str | None = None
    delay: float = 0.0

    def chunks(self, seq: int = 0) -> list[dict[str, Any]]:
        out = [role_chunk()]
        if self.reasoning:
            out += reasoning_chunks(self.reasoning, self.split, self.reasoning_field)
        if self.text:
            out += text_chunks(self.text, self.split)
        for i, c in enumerate(self.tool_calls):
            out += tool_call_chunks(_call_id(c, i, seq), c.name, c.arguments, self.split, index=i)
        out.append(
            finish_chunk(self.finish_reason or ("tool_calls" if self.tool_calls else "stop"))
        )
        if self.usage is not None:
            out.append(usage_chunk(*self.usage))
        return out

    def completion(self) -> Completion:
        return Completion(
            content=self.text,
            tool_calls=self.tool_calls,
            reasoning=self.reasoning,
            reasoning_field=self.reasoning_field,
            finish_reason=self.finish_reason,
            usage=self.usage,
        )


Response = (
    SSE | Raw | Error | EmptyBody | Completion | Reply | list[dict[str, Any] | str | bytes] | str
)


# --------------------------------------------------------------------------- recorded requests


@dataclass
class Received:
    """A request the server received. `body` is the parsed JSON (None if it was not JSON)."""

    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any
    raw: bytes
    time: float = field(default_factory=time.monotonic)  # when it arrived

    @property
    def stream(self) -> bool:
        return bool(isinstance(self.body, dict) and self.body.get("stream"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or []) if isinstance(self.body, dict) else []

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.body.get("tools") or []) if isinstance(self.body, dict) else []

    @property
    def tool_names(self) -> list[str]:
        return [t.get("function", {}).get("name", "") for t in self.tools]

    def __getitem__(self, key: str) -> Any:
        return self.body[key]

    def __contains__(self, key: str) -> bool:
        return isinstance(self.body, dict) and key in self.body


# --------------------------------------------------------------------------- context window

CONTEXT_STYLES = ("llama-cpp-python", "llama.cpp", "vllm", "openai", "lmstudio")
SERVES = ("llama.cpp", "ollama", "vllm", "lmstudio")


def _compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def scripted_prompt_tokens(body: Any) -> int:
    """The prompt's size in this server's tokens: the compact JSON of `messages` (and of `tools`
    when the request has some), in characters, divided by 4, rounded up. Deterministic, so a test
    can build a request of a known size."""
    if not isinstance(body, dict):
        return 0
    text = _compact(body.get("messages") or [])
    if body.get("tools"):
        text += _compact(body["tools"])
    return math.ceil(len(text) / 4)


def _requested_output(body: Any) -> int | None:
    if not isinstance(body, dict):
        return None
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def scripted_tokens(body: Any) -> int:
    """The whole request: `scripted_prompt_tokens(body)` plus the output it asks room for
    (`max_completion_tokens` or `max_tokens`, when set)."""
    return scripted_prompt_tokens(body) + (_requested_output(body) or 0)


def context_error(style: str, window: int, body: Any) -> tuple[int, Any] | None:
    """The status and body a server of `style` answers a request that does not fit in `window`
    tokens, or None when it fits."""
    prompt = scripted_prompt_tokens(body)
    output = _requested_output(body)
    if style == "llama-cpp-python":
        # llama_cpp/llama.py raises "Requested tokens (P) exceed context window of N" when
        # P >= N; llama_cpp/server/errors.py turns it into this (max_tokens as the request had it).
        if prompt < window:
            return None
        message = (
            f"This model's maximum context length is {window} tokens. "
            f"However, you requested {prompt + (output or 0)} tokens "
            f"({prompt} in the messages, {output} in the completion). "
            "Please reduce the length of the messages or completion."
        )
        return 400, {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        }
    if style == "llama.cpp":
        # tools/server/server-context.cpp (send_error, ERROR_TYPE_EXCEED_CONTEXT_SIZE) and
        # server_task_result_error::to_json, which adds n_prompt_tokens and n_ctx.
        if prompt < window:
            return None
        message = (
            f"request ({prompt} tokens) exceeds the available context size "
            f"({window} tokens), try increasing it"
        )
        return 400, {
            "error": {
                "code": 400,
                "message": message,
                "type": "exceed_context_size_error",
                "n_prompt_tokens": prompt,
                "n_ctx": window,
            }
        }
    if style == "vllm":
        # vllm/renderers/params.py: the prompt is tokenized with truncation one token past the
        # room left, hence "at least"; the error is a VLLMValidationError (its str() appends the
        # parameter) sent as ErrorResponse(error=ErrorInfo(...)).
        out = output or 0
        if prompt + out <= window:
            return None
        seen = max(window - out + 1, 1)
        message = (
            f"This model's maximum context length is {window} tokens. However, you requested "
            f"{out} output tokens and your prompt contains at least {seen} input tokens, for a "
            f"total of at least {seen + out} tokens. Please reduce the length of the input "
            f"prompt or the number of requested output tokens. "
            f"(parameter=input_tokens, value={seen})"
        )
        return 400, {
            "error": {
                "message": message,
                "type": "BadRequestError",
                "param": "input_tokens",
                "code": 400,
            }
        }
    if style == "openai":
        if prompt + (output or 0) <= window:
            return None
        if output:
            message = (
                f"This model's maximum context length is {window} tokens. However, you "
                f"requested {prompt + output} tokens ({prompt} in the messages, {output} in the "
                "completion). Please reduce the length of the messages or completion."
            )
        else:
            message = (
                f"This model's maximum context length is {window} tokens. However, your "
                f"messages resulted in {prompt} tokens. Please reduce the length of the messages."
            )
        return 400, {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        }
    if style == "lmstudio":
        if prompt < window:
            return None
        message = (
            f"Trying to keep the first {prompt} tokens when context the overflows. However, the "
            f"model is loaded with context length of only {window} tokens, which is not enough. "
            "Try to load the model with a larger context length, or provide a shorter input"
        )
        return 400, {"error": message}
    raise ValueError(f"unknown context_style {style!r}")


@dataclass
class Delayed:
    """An answer for `routes` sent after `seconds` (cut short when the server closes)."""

    seconds: float
    answer: Any


def _ollama_name(name: str) -> str:
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def _llama_props(model: str, n_ctx: int, slots: int) -> dict[str, Any]:
    """llama.cpp's GET /props (tools/server/server-context.cpp, get_props): the slot's n_ctx in
    default_generation_settings; older builds also gave the whole context at the top level."""
    return {
        "default_generation_settings": {
            "params": {
                "n_predict": -1,
                "seed": 4294967295,
                "temperature": 0.800000011920929,
                "top_k": 40,
                "top_p": 0.949999988079071,
                "min_p": 0.05000000074505806,
                "n_keep": 0,
                "stream": True,
                "samplers": ["penalties", "dry", "top_k", "typ_p", "top_p", "min_p", "temperature"],
            },
            "n_ctx": n_ctx,
        },
        "total_slots": slots,
        "model_alias": model,
        "model_path": f"/models/{model}.gguf",
        "modalities": {"vision": False, "audio": False},
        "endpoint_slots": True,
        "endpoint_props": False,
        "endpoint_metrics": False,
        "webui": True,
        "chat_template": "{% for message in messages %}{{ message.content }}{% endfor %}",
        "bos_token": "<|im_start|>",
        "eos_token": "<|im_end|>",
        "build_info": "b6123-scripted",
        "n_ctx": n_ctx * slots,
    }


_OLLAMA_DETAILS = {
    "parent_model": "",
    "format": "gguf",
    "family": "llama",
    "families": ["llama"],
    "parameter_size": "3.2B",
    "quantization_level": "Q4_K_M",
}
_OLLAMA_DIGEST = "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72"


def _ollama_show(context_length: int, num_ctx: int | None) -> dict[str, Any]:
    """Ollama's POST /api/show: `parameters` as server/routes.go writes it (name padded to 30)."""
    params = [("stop", '"<|start_header_id|>"'), ("stop", '"<|end_header_id|>"')]
    params.append(("stop", '"<|eot_id|>"'))
    if num_ctx is not None:
        params.append(("num_ctx", str(num_ctx)))
    parameters = "\n".join(f"{k:<30} {v}" for k, v in params)
    modelfile = (
        '# Modelfile generated by "ollama show"\n'
        "# To build a new Modelfile based on this, replace FROM with:\n"
        "# FROM scripted-model:latest\n\n"
        f"FROM /root/.ollama/models/blobs/sha256-{_OLLAMA_DIGEST}\n"
        + "".join(f"PARAMETER {k} {v}\n" for k, v in params)
    )
    return {
        "license": "LLAMA 3.2 COMMUNITY LICENSE AGREEMENT",
        "modelfile": modelfile,
        "parameters": parameters,
        "template": "{{ .System }}{{ .Prompt }}",
        "details": _OLLAMA_DETAILS,
        "model_info": {
            "general.architecture": "llama",
            "general.basename": "Llama-3.2",
            "general.file_type": 15,
            "general.parameter_count": 3212749888,
            "general.quantization_version": 2,
            "llama.attention.head_count": 24,
            "llama.attention.head_count_kv": 8,
            "llama.attention.layer_norm_rms_epsilon": 0.00001,
            "llama.block_count": 28,
            "llama.context_length": context_length,
            "llama.embedding_length": 3072,
            "llama.feed_forward_length": 8192,
            "llama.rope.freq_base": 500000,
            "llama.vocab_size": 128256,
            "tokenizer.ggml.model": "gpt2",
        },
        "capabilities": ["completion", "tools"],
        "modified_at": "2025-01-01T00:00:00Z",
    }


def _ollama_ps_entry(model: str, context_length: int) -> dict[str, Any]:
    """One model of Ollama's GET /api/ps (api/types.go, ProcessModelResponse)."""
    name = _ollama_name(model)
    return {
        "name": name,
        "model": name,
        "size": 3338801804,
        "digest": _OLLAMA_DIGEST,
        "details": _OLLAMA_DETAILS,
        "expires_at": "2030-01-01T00:00:00Z",
        "size_vram": 3338801804,
        "context_length": context_length,
    }


def _lmstudio_entry(
    model: str, max_context: int, loaded_context: int | None, loaded: bool
) -> dict[str, Any]:
    """One model of LM Studio's GET /api/v0/models."""
    entry: dict[str, Any] = {
        "id": model,
        "object": "model",
        "type": "llm",
        "publisher": "lmstudio-community",
        "arch": "llama",
        "compatibility_type": "gguf",
        "quantization": "Q4_K_M",
        "state": "loaded" if loaded else "not-loaded",
        "max_context_length": max_context,
    }
    if loaded and loaded_context is not None:
        entry["loaded_context_length"] = loaded_context
    return entry


# --------------------------------------------------------------------------- the server


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: ScriptedServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (a cancelled test, a closed pool) is normal here, not news."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # small writes leave at once, as separate TCP segments
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet tests
        pass

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection)
        self._drop_next = False  # EmptyBody(then_close=True) was the last answer on it

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        self.server.owner._untrack(self.connection)

    # -- plumbing ---------------------------------------------------------------------------

    def _start(self, status: int, headers: dict[str, str], chunked: bool) -> None:
        self.send_response(status)
        names = {k.lower() for k in headers}
        for k, v in headers.items():
            self.send_header(k, v)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        elif "content-length" not in names:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.flush()

    def _write(self, data: bytes, chunked: bool) -> None:
        if not data:
            return
        if chunked:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        else:
            self.wfile.write(data)
        self.wfile.flush()

    def _end(self, chunked: bool) -> None:
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    def _abort(self) -> None:
        """Close the connection now, mid-body: the client sees a dropped stream."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        self.send_response(status)
        has_type = False
        for k, v in (headers or {}).items():
            has_type |= k.lower() == "content-type"
            self.send_header(k, v)
        if not has_type:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    # -- routes -----------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        owner = self.server.owner
        path = urlsplit(self.path).path
        owner._record_lookup(
            Received("GET", path, {k.lower(): v for k, v in self.headers.items()}, None, b"")
        )
        if self._answer_route("GET", path, None):
            return
        if path.rstrip("/").endswith("/models") and owner.models is not None:
            owner._count_models()
            if owner.models_delay:
                time.sleep(owner.models_delay)
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [owner._model_card(m) for m in owner.models],
                },
            )
        else:
            self._send_json(404, {"error": {"message": f"no route for GET {path}"}})

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = urlsplit(self.path).path
        if self._drop_next:
            self._abort()  # read, never answered, not recorded
            return
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        if not path.endswith("/chat/completions"):
            owner._record_lookup(
                Received("POST", path, {k.lower(): v for k, v in self.headers.items()}, body, raw)
            )
            if self._answer_route("POST", path, body):
                return
            self._send_json(404, {"error": {"message": f"no route for POST {path}"}})
            return
        req = Received("POST", path, {k.lower(): v for k, v in self.headers.items()}, body, raw)
        if (
            owner.api_key is not None
            and req.headers.get("authorization") != f"Bearer {owner.api_key}"
        ):
            owner._record(req)
            self._send_json(401, {"error": {"message": "Incorrect API key provided"}})
            return
        if body is None:
            owner._record(req)
            self._send_json(400, {"error": {"message": "the body is not JSON"}})
            return
        if owner.context_window is not None and owner.context_style is not None:
            refused = context_error(owner.context_style, owner.context_window, body)
            if refused is not None:
                owner._record(req)  # seen, but the script is kept for the next request
                self._send_json(*refused)
                return
        seq, response = owner._record_and_pick(req)
        try:
            self._serve(response, req, seq)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True  # the client went away; nothing to tell it

    def _answer_route(self, method: str, path: str, body: Any) -> bool:
        """Answer a `routes` override or a native endpoint of `serves`; False when neither."""
        owner = self.server.owner
        key = (method, path.rstrip("/") or "/")
        if key in owner.routes:
            answer = owner.routes[key]
        else:
            answer = owner._native(method, key[1], body)
            if answer is None:
                return False
        try:
            self._send_answer(answer)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True
        return True

    def _send_answer(self, answer: Any) -> None:
        owner = self.server.owner
        if isinstance(answer, Delayed):
            if owner._stopping.wait(answer.seconds):
                self._abort()
                return
            answer = answer.answer
        if isinstance(answer, Error):
            body = answer.body
            if body is None:
                body = {
                    "error": {"message": answer.message, "type": "scripted", "code": answer.status}
                }
            if isinstance(body, str):
                body = body.encode()
            self._send_json(answer.status, body, answer.headers)
        elif isinstance(answer, tuple):  # (status, JSON) from a native endpoint
            self._send_json(*answer)
        elif isinstance(answer, str | bytes):
            self._send_json(200, answer.encode() if isinstance(answer, str) else answer)
        else:
            self._send_json(200, answer)

    def _serve(self, response: Response, req: Received, seq: int) -> None:
        owner = self.server.owner
        if isinstance(response, str):
            response = Reply(response)
        if owner.report_usage:
            response = owner._with_usage(response, req)
        if isinstance(response, list):
            response = SSE(response)
        if isinstance(response, Reply):
            if req.stream:
                response = SSE(response.chunks(seq), delay=response.delay)
            else:
                response = response.completion()
        if isinstance(response, Completion):
            self._send_json(response.status, response.to_json(owner.model_name, seq))
        elif isinstance(response, Error):
            if response.body is None:
                body: Any = {
                    "error": {
                        "message": response.message,
                        "type": "scripted",
                        "code": response.status,
                    }
                }
            elif isinstance(response.body, str):
                body = response.body.encode()
            else:
                body = response.body
            self._send_json(response.status, body, response.headers)
        elif isinstance(response, EmptyBody):
            headers = dict(response.headers)
            if not response.chunked:
                headers["Content-Length"] = "0"
            self._start(200, headers, response.chunked)
            self._end(response.chunked)
            self._drop_next = response.then_close
        elif isinstance(response, Raw):
            pieces = [response.pieces] if isinstance(response.pieces, bytes) else response.pieces
            self._start(response.status, response.headers, response.chunked)
            for i, piece in enumerate(pieces):
                if i and response.delay:
                    time.sleep(response.delay)
                self._write(piece, response.chunked)
            if response.drop:
                self._abort()
            else:
                self._end(response.chunked)
        elif isinstance(response, SSE):
            self._serve_sse(response)
        else:  # pragma: no cover - a mistake in a test's script
            raise TypeError(f"cannot serve {response!r}")

    def _serve_sse(self, sse: SSE) -> None:
        owner = self.server.owner
        events = encode_sse(sse.chunks, done=sse.done, model=owner.model_name, crlf=sse.crlf)
        headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", **sse.headers}
        self._start(sse.status, headers, sse.chunked)
        for i, event in enumerate(events):
            if sse.drop_after is not None and i >= sse.drop_after:
                self._abort()
                return
            if sse.silence_after is not None and i >= sse.silence_after:
                owner._stopping.wait()
                self._abort()
                return
            if i and sse.delay:
                time.sleep(sse.delay)
            self._write(event, sse.chunked)
        if sse.drop_after is not None:
            self._abort()
            return
        if sse.silence_after is not None:
            owner._stopping.wait()
            self._abort()
            return
        self._end(sse.chunked)


class ScriptedServer:
    """An OpenAI-compatible server on 127.0.0.1 with a queue of scripted answers.

    `base_url` ends in `prefix` ("/v1"); GET {prefix}/models lists `models` (None: 404, as a
    server that is not OpenAI-compatible would). `api_key` makes it demand that bearer token.
    `on_empty(request)` answers when the script is used up (default: the text "ok").
    `context_window`, `context_style`, `report_usage`, `serves`, `model_max`, `ollama_num_ctx`,
    `llama_slots`, `loaded` and `routes`: the context window, as the module docstring says.
    """

    def __init__(
        self,
        *script: Response,
        models: Sequence[str] | None = (DEFAULT_MODEL,),
        prefix: str = "/v1",
        api_key: str | None = None,
        models_delay: float = 0.0,
        on_empty: Callable[[Received], Response] | None = None,
        context_window: int | None = None,
        context_style: str | None = None,
        report_usage: bool = False,
        serves: str | None = None,
        model_max: int | None = None,
        ollama_num_ctx: int | None = None,
        llama_slots: int = 1,
        loaded: bool = True,
        routes: dict[tuple[str, str], Any] | None = None,
    ) -> None:
        self.models = list(models) if models is not None else None
        self.model_name = self.models[0] if self.models else DEFAULT_MODEL
        self.prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
        self.api_key = api_key
        self.models_delay = models_delay
        self.on_empty = on_empty or (lambda req: Reply("ok"))
        if serves is not None and serves not in SERVES:
            raise ValueError(f"serves must be one of {SERVES}, not {serves!r}")
        if serves is not None and context_window is None:
            raise ValueError("serves needs a context_window to serve")
        if context_style is not None and context_style not in CONTEXT_STYLES:
            raise ValueError(f"context_style must be one of {CONTEXT_STYLES}")
        self.context_window = context_window
        self.serves = serves
        if context_style is None and serves != "ollama":  # Ollama cuts the prompt, refuses nothing
            context_style = serves if serves in CONTEXT_STYLES else "llama-cpp-python"
        self.context_style = context_style
        self.report_usage = report_usage
        self.model_max = model_max if model_max is not None else context_window
        self.ollama_num_ctx = ollama_num_ctx
        self.llama_slots = max(1, llama_slots)
        self.loaded = loaded
        self.routes = {
            (method.upper(), path.rstrip("/") or "/"): answer
            for (method, path), answer in (routes or {}).items()
        }
        self.lookups: list[Received] = []  # requests other than chat completions
        self.requests: list[Received] = []
        self.models_requests = 0
        self._queue: deque[Response] = deque(script)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def conversation(cls, *replies: Response, **kw: Any) -> ScriptedServer:
        """A server that answers a multi-step conversation: one response per request, in order
        (tool calls, then the answer that follows the tool results...). Same as the constructor."""
        return cls(*replies, **kw)

    # -- life -------------------------------------------------------------------------------

    def start(self) -> ScriptedServer:
        if self._httpd is not None:
            return self
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.01},
            daemon=True,
            name=f"scripted-server:{self.port}",
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; hanging (silent) answers end and open connections are cut."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return self._httpd.server_address[1]

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}{self.prefix}"

    # -- script -----------------------------------------------------------------------------

    def script(self, *responses: Response) -> ScriptedServer:
        """Queue responses: the next requests on /chat/completions get them, in order."""
        with self._lock:
            self._queue.extend(responses)
        return self

    def drop_script(self) -> None:
        """Forget the responses not used yet."""
        with self._lock:
            self._queue.clear()

    @property
    def pending(self) -> int:
        """Scripted responses not used yet."""
        with self._lock:
            return len(self._queue)

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[Received]:
        """Block until `n` chat requests have arrived (for subprocess tests); raises TimeoutError.
        From async code: `await asyncio.to_thread(server.wait_for_requests, n)`."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.requests) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(self.requests)} request(s) arrived, not {n}")
                self._cond.wait(left)
            return list(self.requests)

    # -- used by the handler ----------------------------------------------------------------

    def _record(self, req: Received) -> int:
        with self._cond:
            self.requests.append(req)
            self._cond.notify_all()
            return len(self.requests) - 1

    def _record_and_pick(self, req: Received) -> tuple[int, Response]:
        seq = self._record(req)
        with self._lock:
            response = self._queue.popleft() if self._queue else None
        if response is None:
            response = self.on_empty(req)
        return seq, response

    def _record_lookup(self, req: Received) -> None:
        with self._lock:
            self.lookups.append(req)

    def _model_card(self, model: str) -> dict[str, Any]:
        """One entry of GET /models: vLLM's carries max_model_len."""
        if self.serves != "vllm":
            return {"id": model, "object": "model", "owned_by": "scripted"}
        return {
            "id": model,
            "object": "model",
            "created": 0,
            "owned_by": "vllm",
            "root": model,
            "parent": None,
            "max_model_len": self.context_window,
            "permission": [
                {
                    "id": "modelperm-scripted",
                    "object": "model_permission",
                    "created": 0,
                    "allow_create_engine": False,
                    "allow_sampling": True,
                    "allow_logprobs": True,
                    "allow_search_indices": False,
                    "allow_view": True,
                    "allow_fine_tuning": False,
                    "organization": "*",
                    "group": None,
                    "is_blocking": False,
                }
            ],
        }

    def _native(self, method: str, path: str, body: Any) -> Any:
        """What the server named by `serves` answers at its root, or None (no such route)."""
        names = self.models or [self.model_name]
        if self.serves == "llama.cpp" and (method, path) == ("GET", "/props"):
            return _llama_props(self.model_name, self.context_window or 0, self.llama_slots)
        if self.serves == "ollama" and (method, path) == ("POST", "/api/show"):
            name = body.get("model") or body.get("name") if isinstance(body, dict) else None
            if not isinstance(name, str) or not name:
                return 400, {"error": "model is required"}
            if _ollama_name(name) not in {_ollama_name(m) for m in names}:
                return 404, {"error": f"model '{name}' not found"}
            return _ollama_show(self.model_max or 0, self.ollama_num_ctx)
        if self.serves == "ollama" and (method, path) == ("GET", "/api/ps"):
            loaded = names if self.loaded else []
            return {"models": [_ollama_ps_entry(m, self.context_window or 0) for m in loaded]}
        if self.serves == "lmstudio" and (method, path) == ("GET", "/api/v0/models"):
            return {
                "object": "list",
                "data": [
                    _lmstudio_entry(m, self.model_max or 0, self.context_window, self.loaded)
                    for m in names
                ],
            }
        return None

    def _with_usage(self, response: Response, req: Received) -> Response:
        """`report_usage`: the prompt figure this server counts for the request."""
        prompt = scripted_prompt_tokens(req.body)
        wants = req.stream and bool(
            isinstance(req.body, dict)
            and isinstance(req.body.get("stream_options"), dict)
            and req.body["stream_options"].get("include_usage")
        )
        if isinstance(response, Reply) and (wants or not req.stream):
            completion = response.usage[1] if response.usage else 0
            return replace(response, usage=(prompt, completion))
        if isinstance(response, list) and wants:
            if not any(isinstance(c, dict) and "usage" in c for c in response):
                return [*response, usage_chunk(prompt, 0)]
        return response

    def _count_models(self) -> None:
        with self._lock:
            self.models_requests += 1

    def _track(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)

    def _untrack(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.discard(conn)


def closed_port_url(prefix: str = "/v1") -> str:
    """A base URL on 127.0.0.1 where nothing listens (a port just bound and released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}{prefix}"


if __name__ == "__main__":
    text = " ".join(sys.argv[1:]) or "ok"
    with ScriptedServer(on_empty=lambda req: Reply(text)) as srv:
        print(srv.base_url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
