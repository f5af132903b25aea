"""A real web server on 127.0.0.1 for the fetch_content tests: routes answered as scripted.

The tool is tested against sockets, not a mock of httpx, because what matters lives there:
redirect headers, a body that streams past the size limit, a server that never answers, a
connection dropped before the status line. The server runs in a background thread
(`ThreadingHTTPServer`), so an async test in the same process can fetch from it.

    with WebServer() as web:
        web.page("/", "<h1>Hi</h1>")
        web.robots("User-agent: *\\nDisallow: /private")
        web.redirect("/old", "/")
        ... FetchContentTool().run(FetchContentArgs(url=web.url("/old")), ctx) ...
        assert web.hits("/robots.txt") == 1

A route without a script answers 404 (so robots.txt allows everything unless scripted).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Route:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | Iterable[bytes] = b""
    delay: float = 0.0  # seconds before answering
    drop: bool = False  # close the connection without answering
    length: bool = True  # send Content-Length (when the body is bytes)


@dataclass
class Hit:
    path: str
    headers: dict[str, str]


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that hangs up (the tool refusing a body, a timeout) is expected here."""


class WebServer:
    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[Hit] = []
        self.sent: dict[str, int] = {}  # body bytes written per path
        self.finished: list[str] = []  # paths whose body is over: all written, or cut off
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802 - the http.server spelling
                server.requests.append(Hit(self.path, dict(self.headers.items())))
                route = server.routes.get(self.path.split("?", 1)[0], Route(404, body=b"none"))
                if route.delay and server._stop.wait(route.delay):
                    return
                if route.drop:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response(route.status)
                for name, value in route.headers.items():
                    self.send_header(name, value)
                chunks: Iterator[bytes]
                if isinstance(route.body, bytes):
                    if route.length:
                        self.send_header("Content-Length", str(len(route.body)))
                    else:
                        self.close_connection = True
                        self.send_header("Connection", "close")
                    chunks = iter([route.body])
                else:
                    self.close_connection = True
                    self.send_header("Connection", "close")
                    chunks = iter(route.body)
                self.end_headers()
                try:
                    for chunk in chunks:
                        self.wfile.write(chunk)
                        server.sent[self.path] = server.sent.get(self.path, 0) + len(chunk)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True
                finally:
                    server.finished.append(self.path)

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), daemon=True
        )

    def __enter__(self) -> WebServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.origin + path

    def route(self, path: str, **spec: object) -> None:
        self.routes[path] = Route(**spec)  # type: ignore[arg-type]

    def page(
        self,
        path: str,
        html: str | bytes,
        content_type: str | None = "text/html; charset=utf-8",
        **spec: object,
    ) -> None:
        body = html.encode("utf-8") if isinstance(html, str) else html
        headers = {"Content-Type": content_type} if content_type else {}
        self.route(path, body=body, headers=headers, **spec)

    def robots(self, text: str, status: int = 200) -> None:
        self.route(
            "/robots.txt",
            status=status,
            body=text.encode("utf-8"),
            headers={"Content-Type": "text/plain"},
        )

    def redirect(self, path: str, to: str, status: int = 302) -> None:
        self.route(path, status=status, headers={"Location": to})

    def hits(self, path: str) -> int:
        return sum(1 for hit in self.requests if hit.path == path)


def closed_port_url(path: str = "/") -> str:
    """A URL on 127.0.0.1 where nothing listens: connection refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"
