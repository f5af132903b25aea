"""The server: a `ThreadingHTTPServer` on 127.0.0.1 that answers chat completions from its
script (the package's docstring says how), serves the native endpoints of the server it plays
and records every request."""

from __future__ import annotations

import json
import select
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from .context import (
    CONTEXT_STYLES,
    SERVES,
    context_error,
    scripted_prompt_tokens,
    scripted_text_tokens,
)
from .native import _llama_props, _lmstudio_entry, _ollama_name, _ollama_ps_entry, _ollama_show
from .ollama import OllamaModels
from .probe import PROBE_HEADER, ProbeBehaviour
from .script import (
    SSE,
    Completion,
    Delayed,
    EmptyBody,
    Error,
    Generating,
    Raw,
    Received,
    Reply,
    Response,
)
from .sse import DEFAULT_MODEL, encode_sse, finish_chunk, role_chunk, text_chunks, usage_chunk

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
        if PROBE_HEADER in self.headers:  # mm's probe: kept apart from every count
            self._probe_lookup(path)
            return
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
        if PROBE_HEADER in req.headers:  # mm's probe: answered apart from the script
            self._probe(req)
            return
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
        if owner.ollama is not None:  # the model loaded (or reloaded) as Ollama would
            refused = owner.ollama.chat_completion(body)
            if refused is not None:
                owner._record(req)
                self._send_json(*refused)
                return
        if owner.context_window is not None and owner.context_style is not None:
            refused = context_error(owner.context_style, owner.context_window, body)
            if refused is not None:
                owner._record(req)  # seen, but the script is kept for the next request
                self._send_json(*refused)
                return
        seq, response = owner._record_and_pick(req)
        owner._behind_generation(response)
        try:
            self._serve(response, req, seq)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True  # the client went away; nothing to tell it

    def _probe_lookup(self, path: str) -> None:
        """The probe's `GET /models` (the model's fingerprint): answered as any other, kept in
        `probe_lookups` alone."""
        owner = self.server.owner
        owner._record_probe(
            Received("GET", path, {k.lower(): v for k, v in self.headers.items()}, None, b""),
            owner.probe_lookups,
        )
        if self._answer_route("GET", path, None):
            return
        if path.rstrip("/").endswith("/models") and owner.models is not None:
            self._send_json(
                200, {"object": "list", "data": [owner._model_card(m) for m in owner.models]}
            )
        else:
            self._send_json(404, {"error": {"message": f"no route for GET {path}"}})

    def _probe(self, req: Received) -> None:
        """A probe's chat request: the key checked, then the answer of `owner.probe`."""
        owner = self.server.owner
        seq = 1000 + owner._record_probe(req, owner.probe_requests)
        if (
            owner.api_key is not None
            and req.headers.get("authorization") != f"Bearer {owner.api_key}"
        ):
            self._send_json(401, {"error": {"message": "Incorrect API key provided"}})
            return
        try:
            self._serve(owner.probe.answer(req), req, seq)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True

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
        elif isinstance(response, Generating):
            self._serve_generating(response, req, seq)
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

    def _serve_generating(self, gen: Generating, req: Received, seq: int) -> None:
        """`Generating`: the pieces shown (a stream), then the generation that goes on whether
        the client reads it or not, the connection watched for its hang-up."""
        owner = self.server.owner
        if req.stream:
            self._start(200, {"Content-Type": "text/event-stream"}, True)
            chunks = [role_chunk(), *(c for p in gen.shown for c in text_chunks(p))]
            for event in encode_sse(chunks, done=False, model=owner.model_name):
                self._write(event, True)
        while not gen.done.wait(0.005):
            if owner._stopping.is_set():
                break
            if not gen.hung_up.is_set() and self._hung_up():
                gen.hung_up.set()  # and the generation goes on, as if nothing happened
        if gen.hung_up.is_set() or owner._stopping.is_set():
            self._abort()
        elif req.stream:
            tail = [*text_chunks(gen.rest), finish_chunk("stop")]
            for event in encode_sse(tail, model=owner.model_name):
                self._write(event, True)
            self._end(True)
        else:
            self._send_json(200, gen.reply.completion().to_json(owner.model_name, seq))

    def _hung_up(self) -> bool:
        """Whether the client closed its end: readable, with nothing to read."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True


class ScriptedServer:
    """An OpenAI-compatible server on 127.0.0.1 with a queue of scripted answers.

    `base_url` ends in `prefix` ("/v1"); GET {prefix}/models lists `models` (None: 404, as a
    server that is not OpenAI-compatible would). `api_key` makes it demand that bearer token.
    `on_empty(request)` answers when the script is used up (default: the text "ok").
    `context_window`, `context_style`, `report_usage`, `serves`, `model_max`, `ollama_num_ctx`,
    `llama_slots`, `loaded` and `routes`: the context window, as the module docstring says.
    `ollama`: Ollama's models and scheduler (`ollama.py`), which then answer every native route
    and load the model for each chat request. `probe`: how mm's probe requests are answered,
    apart from the script (`probe.py`; by default as the server `serves` names would).
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
        ollama: OllamaModels | None = None,
        tokenizer: Callable[[str], int] | None = None,
        probe: ProbeBehaviour | None = None,
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
        # POST /tokenize's count of a text (llama.cpp's and vLLM's): a real tokenizer's, or
        # the rule of `scripted_prompt_tokens`, a token per 4 characters
        self.tokenizer = tokenizer or scripted_text_tokens
        self.routes = {
            (method.upper(), path.rstrip("/") or "/"): answer
            for (method, path), answer in (routes or {}).items()
        }
        self.ollama = ollama
        # how mm's probe requests are answered (probe.py), and those requests, kept apart
        self.probe = probe if probe is not None else ProbeBehaviour.for_server(serves)
        self.probe_requests: list[Received] = []
        self.probe_lookups: list[Received] = []
        self.lookups: list[Received] = []  # requests other than chat completions
        self.requests: list[Received] = []
        self.models_requests = 0
        self._queue: deque[Response] = deque(script)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._generating: Generating | None = None  # the last generation started
        self._connections: set[socket.socket] = set()
        self.connections_made = 0  # every connection a client opened, kept-alive ones once
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
        self.cut_connections()
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

    def _behind_generation(self, response: Response) -> None:
        """One generation at a time: a chat request waits while a `Generating` answer runs,
        whether its client is still there or not (as llama-cpp-python's lock makes it)."""
        with self._lock:
            running = self._generating
            if isinstance(response, Generating):
                self._generating = response
        while running is not None and not running.done.wait(0.005):
            if self._stopping.is_set():
                return

    def _record_probe(self, req: Received, into: list[Received]) -> int:
        with self._lock:
            into.append(req)
            return len(into) - 1

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
        if self.ollama is not None:
            return self.ollama.answer(method, path, body)
        names = self.models or [self.model_name]
        if self.serves in ("llama.cpp", "vllm") and (method, path) == ("POST", "/tokenize"):
            return self._tokenize(body)
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

    def _tokenize(self, body: Any) -> Any:
        """llama.cpp's /tokenize reads `content` (and answers no tokens without it); vLLM's
        reads `prompt` (a 400 without it) and gives the count beside the tokens."""
        field = "content" if self.serves == "llama.cpp" else "prompt"
        text = body.get(field) if isinstance(body, dict) else None
        if not isinstance(text, str):
            if self.serves == "llama.cpp":
                return {"tokens": []}
            return 400, {"error": {"message": "prompt: Field required", "code": 400}}
        tokens = list(range(self.tokenizer(text)))
        if self.serves == "llama.cpp":
            return {"tokens": tokens}
        return {"count": len(tokens), "max_model_len": self.context_window, "tokens": tokens}

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
            self.connections_made += 1

    def cut_connections(self) -> None:
        """Close the connections clients keep open between requests, as a server that drops
        idle ones does; it goes on serving new ones."""
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _untrack(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.discard(conn)


def closed_port_url(prefix: str = "/v1") -> str:
    """A base URL on 127.0.0.1 where nothing listens (a port just bound and released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}{prefix}"
