"""Loading modules ahead of their first use, in a thread: what window mode does once it is ready
for what the first request, the first answer and the first tool call would otherwise wait for
(httpx, Markdown's modules, the tools' argument classes), while the person types.

Not a daemon thread: a process that ends meanwhile (mm stopping at once on a configuration
error) waits for the import, at most its length, rather than being torn down in the middle of an
extension module's start, which crashed in OpenSSL's exit handlers."""

from __future__ import annotations

import importlib
import threading


def preload(name: str, *modules: str) -> None:
    """Import `modules`, in this order, in a thread called `name`."""
    threading.Thread(target=_load, args=(modules,), name=name).start()


def _load(modules: tuple[str, ...]) -> None:
    try:
        for module in modules:
            importlib.import_module(module)
    except Exception:  # noqa: BLE001, S110 - the first use then loads it and says what is wrong
        pass
