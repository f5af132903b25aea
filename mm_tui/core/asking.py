"""What asking another agent means to every layer, without the machinery that does it: the
outcome of a call (`Asked`), an agent as the runner needs it (`AgentEntry`), the runner the
ask_agent tool hands calls to (`AgentRunner`, filled at start-up with the ACP client's pool of
child `mm -acp` processes), the nesting limit, and what the engine needs of the tool for `/ask`.

Why here: the tool, the ACP client and the engine all speak of these; defined in any one of them,
the others would import it, and the tool and the ACP client imported each other."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mm_tui.core.frozen import mutable

if TYPE_CHECKING:
    from mm_tui.core.questions import Questions

BUILTIN_TITLE = "mm"  # acp.title's default: says nothing about an agent's purpose
DEPTH_VAR = "MM_ASK_DEPTH"  # how many levels of asked agents are above this process
MAX_DEPTH = 2  # asked agents nest at most this many levels below the agent a person talks to

NO_AGENTS = (
    "[/ask: no agent is configured — name one under mmConfigs "
    "(name: {config: agent file, description, yolo}) in the configuration]"
)


@mutable
class Asked:
    """How a call went: what the agent answered, and the quoted error when it did not finish
    (`failed`, `stopped before finishing`, `gave no answer`)."""

    name: str
    answer: str = ""
    error: str | None = None
    cancelled: bool = False


@mutable
class AgentEntry:
    """An agent of mmConfigs as the runner needs it."""

    name: str
    config: Path
    yolo: bool | None = None


class AgentRunner(Protocol):
    """Runs asked agents: one call at a time per agent, children kept between calls."""

    @property
    def children(self) -> Mapping[str, Any]:
        """Agent name -> its running child (with a `pid`)."""
        ...

    async def ask(
        self,
        name: str,
        text: str,
        *,
        shown_prompt: str,
        cwd: Path,
        emit: Callable[[Any], None],
        questions: Questions,
        asked_by: str,
        yolo: bool,
        watchdog: float,
    ) -> Asked:
        """One call; never raises for the child's faults (they are in `Asked.error`)."""
        ...

    async def release(self) -> None:
        """One user less; the last one stops the children."""
        ...


# Gives the runner for these agents (`command` replaces `python -m mm_tui.cli` for the children).
RunnerFactory = Callable[[Mapping[str, AgentEntry], Sequence[str] | None], AgentRunner]


class AgentAsker(Protocol):
    """What the engine needs of the ask_agent tool to run `/ask` as a turn of its own."""

    async def ask(self, agent: str, prompt: str, ctx: Any, *, with_context: bool = False) -> Asked:
        """One call to `agent`; the child's events go to `ctx.emit`."""
        ...

    def result_text(self, asked: Asked, max_output: int) -> str:
        """What the model gets of the call."""
        ...


def current_depth(environ: Mapping[str, str] | None = None) -> int:
    """How deep this process is among asked agents: 0 for the mm a person runs."""
    raw = (os.environ if environ is None else environ).get(DEPTH_VAR, "")
    try:
        return max(0, int(raw))
    except ValueError:
        return 0
