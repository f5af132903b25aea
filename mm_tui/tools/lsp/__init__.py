"""The lsp tool: language servers asked for definitions, references, hover text, outlines,
diagnostics and renames (see tool.py)."""

from mm_tui.tools.lsp.tool import LspArgs, LspTool

__all__ = ["LspArgs", "LspTool"]
