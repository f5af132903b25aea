"""The tools an agent calls: bash, the file tools, read_skill, ask_agent, and the optional ones
(lsp/, fetch/, mcp/); registry.py declares those the configuration asks for."""

from __future__ import annotations


def prepare() -> None:
    """Load the built-in tools' argument classes (args.py: pydantic) and the sandbox the tools
    work under (core/file_access.py, and with it the launcher) in a thread: window mode calls
    it once ready, so that neither ready nor the first tool call waits for them."""
    from mm_tui.core.preload import preload

    preload("mm-tool-args", "mm_tui.tools.args", "mm_tui.core.file_access")
