"""fetch_content: a web page as clean Markdown (see tool.py for the whole story)."""

from mm_tui.tools.fetch.tool import FetchContentArgs, FetchContentTool

__all__ = ["FetchContentArgs", "FetchContentTool"]
