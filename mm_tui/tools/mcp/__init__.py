"""MCP servers' tools, through the official `mcp` SDK: the servers of `mcpServers` (a `command`
on stdio, or a `url` over streamable HTTP) and those an editor gives in ACP's session/new.

- `pool.py`: `McpPool`, the servers of one configuration (their `${VAR}`s expanded), started
  in the background, their tools offered as each becomes ready under names no two share, one
  warning for each that fails, all stopped on exit;
- `link.py`: one server's connection (the only module that imports the SDK, loaded in a thread):
  its calls (a progress token each; `notifications/cancelled` when one is cancelled), its list
  of tools (listed again when the server says it changed), the project folder as its root;
- `tool.py`: `McpTool`, a server's tool as an mm tool (`<server>__<tool>`, the permission box,
  the guards, truncation and the recap's counter, as for the built-in tools).

This package depends on mm_tui.core, mm_tui.config and mm_tui.tools.base only.
"""

from mm_tui.tools.mcp.pool import McpPool
from mm_tui.tools.mcp.tool import McpTool, tool_name

__all__ = ["McpPool", "McpTool", "tool_name"]
