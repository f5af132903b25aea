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
- `Generating(shown, rest)`: an answer the server goes on writing after the client has gone
  (llama-cpp-python's non-streamed answers), until the test calls `finish()`; the next chat
  requests wait for that end, and `hung_up` records when the server saw the client hang up.

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
  "llama.cpp" and "vllm" also answer POST /tokenize as those servers do: llama.cpp's reads
  `content` and answers `{"tokens": [...]}` (no tokens without it), vLLM's reads `prompt` (a 400
  without it) and answers `{"count": N, "max_model_len": W, "tokens": [...]}`; a text counts
  `tokenizer(text)` tokens, by default `scripted_text_tokens` (its characters divided by 4,
  rounded up, the rule of `scripted_prompt_tokens`). Ollama and LM Studio have no /tokenize.
- `ollama=OllamaModels(...)` plays Ollama itself (`ollama.py`): its models, /api/tags, /api/show,
  /api/ps, /api/create, /api/generate, /api/chat and /v1/models, and its scheduler, which loads
  the model for each chat request with the context Ollama would give it and counts each load
  (`loads`), a reload whenever a request's context differs from the loaded one's.
- `routes={("GET", "/props"): answer}` overrides any route but chat completions: a dict or list is
  sent as JSON, str or bytes as they are (status 200), an `Error` as its error, `Delayed(seconds,
  answer)` after a wait. Requests other than chat completions are recorded in `lookups`.

mm's model probe (requests with the `X-MM-Probe` header) never uses the script: `probe=
ProbeBehaviour(...)` says how its requests are answered (`probe.py`; by default as a server that
takes and streams tool calls), and they are kept in `probe_requests` and `probe_lookups`, never
in `requests`, `lookups` or `models_requests`.

The package: `script.py` is the script language (the answers a test queues, the requests it
reads back), `sse.py` builds the chunks and frames them as SSE, `context.py` and `native.py`
are the context window's refusals and the servers' own endpoints, `ollama.py` Ollama's models
and scheduler, `server.py` serves them.

Run it by hand: `PYTHONPATH=tests python -m support.scripted_server "Hello there"` prints its
base URL and answers every request with that text.
"""

from __future__ import annotations

from .context import (
    context_error,
    scripted_prompt_tokens,
    scripted_text_tokens,
    scripted_tokens,
)
from .ollama import OllamaModels
from .probe import ProbeBehaviour
from .script import (
    SSE,
    Call,
    Completion,
    Delayed,
    EmptyBody,
    Error,
    Generating,
    Raw,
    Received,
    Reply,
    call,
    drop_after,
    silence_after,
)
from .server import ScriptedServer, closed_port_url
from .sse import (
    chunk,
    encode_sse,
    finish_chunk,
    interleave,
    reasoning_chunks,
    role_chunk,
    split_bytes,
    split_text,
    text_chunks,
    tool_call_chunks,
    usage_chunk,
)

__all__ = [
    "Call",
    "Completion",
    "Delayed",
    "EmptyBody",
    "Error",
    "OllamaModels",
    "ProbeBehaviour",
    "Generating",
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
    "scripted_text_tokens",
    "scripted_tokens",
    "silence_after",
    "split_bytes",
    "split_text",
    "text_chunks",
    "tool_call_chunks",
    "usage_chunk",
]
