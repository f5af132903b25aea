"""The lsp tool: language servers asked for definitions, references, hover text, outlines,
diagnostics and renames (see tool.py)."""

from mm_tui.tools.lsp.args import LspArgs
from mm_tui.tools.lsp.tool import LspTool

__all__ = ["LspArgs", "LspTool"]
