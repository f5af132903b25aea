"""The tools an agent calls: bash, the file tools, read_skill, ask_agent, and the optional ones
(lsp/, fetch/, mcp/); registry.py declares those the configuration asks for."""

from __future__ import annotations


def prepare() -> None:
    """Load the built-in tools' argument classes (args.py: pydantic) in a thread: window mode
    calls it once ready, so that neither ready nor the first tool call waits for them.

    Not a daemon thread: a process that ends as the thread imports waits for it (at most the
    import) rather than being torn down in the middle of an extension module's start."""
    import threading

    threading.Thread(target=_load_args, name="mm-tool-args").start()


def _load_args() -> None:
    try:
        import mm_tui.tools.args  # noqa: F401
    except Exception:  # noqa: BLE001, S110 - the first call then says what is wrong
        pass
