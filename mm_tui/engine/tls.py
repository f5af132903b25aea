"""The one TLS context of mm's model-server clients, made once, and ahead of time in window mode.

httpx makes a new SSL context for every client it builds, and loads certifi's bundle of
certificate authorities into each, and start-up builds several clients: a stand-in for that
default, shared by them all (see docs/performance.md). It is the same one httpx makes by default
(certifi's bundle, or SSL_CERT_FILE / SSL_CERT_DIR when set), so what is trusted does not change.

Loading the bundle is OpenSSL's work, done without holding the GIL: `prepare` starts it in a
thread (window mode as its boot begins, while the configuration loads), so that it runs on the
other core."""

from __future__ import annotations

import os
import ssl
import threading

_lock = threading.Lock()
_context: ssl.SSLContext | None = None


def _make() -> ssl.SSLContext:
    """As `httpx.create_ssl_context()` makes it (verify=True, trust_env=True)."""
    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def tls_context() -> ssl.SSLContext:
    """The shared context; made now unless it is made already (or being made: then this waits
    for it)."""
    global _context
    with _lock:
        if _context is None:
            _context = _make()
        return _context


def prepare() -> None:
    """Start making the context in a thread; `tls_context()` then waits for it, if at all.

    Not a daemon thread: Python waits for it before exiting. A process that exits while OpenSSL
    loads the bundle (mm stopping at once on a configuration error) crashed in OpenSSL's exit
    handlers (SIGSEGV); the wait is at most what loading the bundle takes."""
    if _context is None:
        threading.Thread(target=_make_quietly, name="mm-tls").start()


def _make_quietly() -> None:
    # A failure (an SSL_CERT_FILE that cannot be read) is raised where the context is used,
    # in words for the person; a thread would print its traceback over the window.
    try:
        tls_context()
    except Exception:  # noqa: BLE001, S110
        pass
