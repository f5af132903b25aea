"""The client side of ACP: this mm asking another one (ask_agent, `/ask`, `mm --ask`).

Each agent of mmConfigs runs as a child `mm -acp --config <agent file> --yolo|--no-yolo`, started
on its first call and kept for the next ones; every call opens a fresh ACP session in the working
folder, so calls share the process (and its warm model connection) but never a conversation.

What the child sends becomes this mm's own events (`core/events.py`), tagged with the agent's
name so that a front end nests them under the agent: `AgentStarted` when the session is open,
`TextDelta` and `ThoughtDelta` as the answer streams, `ToolCallStarted` / `ToolCallFinished` for
its tool calls (named and timed from `_meta["mm"]`, see `core/acp_meta.py`, else from the protocol's own
fields), `PermissionRequested` when it asks, and `AgentFinished` when the call is over.

The rest of mm imports from here: the package's modules are its own business.
"""

from mm_tui.acp_client.child import AgentInfo, Child
from mm_tui.acp_client.pool import AgentPool, agent_file_settings
from mm_tui.acp_client.wording import failed, no_answer, stopped

__all__ = [
    "AgentInfo",
    "AgentPool",
    "Child",
    "agent_file_settings",
    "failed",
    "no_answer",
    "stopped",
]
