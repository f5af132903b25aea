"""Loading modules ahead of their first use, in a thread: what window mode does once it is ready
for what the first request, the first answer and the first tool call would otherwise wait for
(httpx, Markdown's modules, the tools' argument classes), while the person types.

Not a daemon thread: a process that ends meanwhile (mm stopping at once on a configuration
error) waits for the import, at most its length, rather than being torn down in the middle of an
extension module's start, which crashed in OpenSSL's exit handlers.

A dotted name is loaded a package at a time, from the top (`import_in_order`). Python's import
of `a.b.c` takes the lock of `a.b.c`, then of `a.b`, and only then of `a`; if the loop's thread
is loading `a` meanwhile, and `a` loads `a.b`, each thread waits for a lock the other holds and
Python raises a deadlock error in one of them (seen as `session/new` failing in ACP, whose model
probe loaded `httpcore._backends.anyio` while a request built httpx's first client). From the
top, the thread holds no lock while it waits for `a`."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable


def preload(name: str, *modules: str, then: Callable[[], object] | None = None) -> None:
    """Import `modules`, in this order, in a thread called `name`; then call `then` there (what
    the modules make on first use: it imports what it needs itself)."""
    threading.Thread(target=_load, args=(modules, then), name=name).start()


def import_in_order(*modules: str) -> None:
    """Import `modules`, in this order, each dotted name's packages first, from the top."""
    for module in modules:
        parts = module.split(".")
        for depth in range(1, len(parts) + 1):
            importlib.import_module(".".join(parts[:depth]))


def _load(modules: tuple[str, ...], then: Callable[[], object] | None) -> None:
    try:
        import_in_order(*modules)
        if then is not None:
            then()
    except Exception:  # noqa: BLE001, S110 - the first use then loads it and says what is wrong
        pass
