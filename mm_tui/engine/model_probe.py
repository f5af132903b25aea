"""The model probe: a few small requests that find out how a model on its server takes tools,
before the person's first request does (engine/probe_findings.py says what each answer means).

The requests, each with `max_tokens` small (64, 16 for plain chat) and one tiny declared tool
(`probe_add`, with `tool_choice: "auto"` as the provider sends it), each marked with the
`X-MM-Probe` header and sent on a connection of its own (llama-cpp-python closes the connection
of its empty 200 though it said keep-alive):

1. a streamed request with the tool, asking for two calls in one reply: whether the server
   takes tools (a 4xx or 5xx whose words name tools: "does not support tools", llama.cpp's
   "tools param requires --jinja"... is a refusal), whether tool calls stream (an empty 200 or
   an error here, and a working non-streamed request, means they do not), whether several
   calls come in one reply, whether the model wrote them as text instead;
2. the same without streaming, only when the first failed, to tell a refusal of tools from a
   refusal of streamed tool calls;
3. a short plain answer, not streamed: whether chat works, tokens per second (its usage's
   completion tokens over the time it took), a reasoning field or `<think>` tags;
4. when the server refuses tools: the textual call format described in the system prompt
   (engine/text_call_prompt.py), and whether the model's answer holds a call mm reads.

The whole probe is bounded (`bound`, 10 s by default; each request by `request_bound` too) and
never raises: a failure is a status ("timed out", "unreachable", "failed") with its reason, and
what was found before it stays."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import field, replace
from typing import TYPE_CHECKING, Any

from mm_tui.core.frozen import mutable
from mm_tui.engine.probe_findings import PROBE_BOUND, PROBE_HEADER, ProbeFindings
from mm_tui.engine.server_errors import server_error_text
from mm_tui.engine.servers import USER_AGENT, connection_problem, is_loopback
from mm_tui.engine.text_call_prompt import describe_text_calls
from mm_tui.engine.text_calls import find_calls

if TYPE_CHECKING:
    import httpx

    from mm_tui.engine.context_window import ContextWindow

REQUEST_BOUND = 8.0  # seconds, one request
MAX_ANSWER = 256 * 1024  # bytes read of one answer at most: 64 tokens take far fewer

PROBE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "probe_add",
        "description": "Add two whole numbers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}
TOOLS_ASK = (
    "Call probe_add twice in this one reply, once with a=1 and b=2 and once with a=3 and b=4. "
    "Answer with the calls only."
)
CHAT_ASK = "Count from one to five in words, and nothing else."
TEXT_ASK = "Call probe_add with a=1 and b=2."
TOOL_WORDS = ("tool", "function call", "--jinja")


class Unreachable(Exception):
    """No connection to the server at all: the probe stops there."""


@mutable
class Heard:
    """One probe request's answer, as far as the probe reads it."""

    status: int = 0
    error: str = ""  # the server's words when it refused, or what went wrong
    text: str = ""
    calls: int = 0  # structured tool calls (distinct indexes, or the list's length)
    reasoning: str = ""  # the field thoughts came in
    completion_tokens: int = 0
    seconds: float = 0.0
    answered: bool = False  # a whole answer came (a finish, [DONE], or a completion)
    indexes: set[int] = field(default_factory=set)

    @property
    def refused_tools(self) -> bool:
        """An HTTP refusal whose words name tools (not a key, a route or a rate limit)."""
        if self.status < 400 or self.status in (401, 403, 404, 408, 429):
            return False
        lowered = self.error.lower()
        return any(word in lowered for word in TOOL_WORDS)

    def take_message(self, message: Any) -> None:
        """A delta or a whole message: its text, its thoughts, its calls."""
        if not isinstance(message, dict):
            return
        content = message.get("content")
        if isinstance(content, str):
            self.text += content
        for name in ("reasoning_content", "reasoning"):
            if isinstance(message.get(name), str) and message[name]:
                self.reasoning = name
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            for n, call in enumerate(calls):
                index = call.get("index", n) if isinstance(call, dict) else n
                self.indexes.add(index if isinstance(index, int) else n)
            self.calls = len(self.indexes)

    def take_object(self, obj: Any, delta: str) -> None:
        """A chunk (`delta` "delta") or a whole completion (`delta` "message")."""
        if not isinstance(obj, dict):
            return
        if "error" in obj and not obj.get("choices"):
            self.error = server_error_text(json.dumps(obj).encode())
            return
        choices = obj.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            self.take_message(choices[0].get(delta))
            self.answered |= bool(choices[0].get("finish_reason")) or delta == "message"
        usage = obj.get("usage")
        if isinstance(usage, dict) and type(usage.get("completion_tokens")) is int:
            self.completion_tokens = max(0, usage["completion_tokens"])


class ModelProbe:
    """The probe of one model on one server (`model`: the name requests go out under)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        bound: float = PROBE_BOUND,
        request_bound: float = REQUEST_BOUND,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.bound = bound
        self.request_bound = request_bound
        self.headers = {"User-Agent": USER_AGENT, "Connection": "close"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self.found = ProbeFindings()
        self.tool_choice = True  # False once the server refused `tool_choice`
        self._client: httpx.AsyncClient | None = None

    async def run(self, window: ContextWindow | None = None) -> ProbeFindings:
        """Probe now; the findings, with `window` (learned elsewhere) among them."""
        started = time.monotonic()
        if window is not None:
            self.found = replace(self.found, window=window.tokens, window_source=window.source)
        status, reason = "done", ""
        try:
            async with asyncio.timeout(self.bound):
                # httpx loaded off the loop: the window may be drawing its first frames
                await asyncio.to_thread(_load_http)
                await self._steps()
        except TimeoutError:
            status, reason = "timed out", f"no whole answer within {self.bound:g} s"
        except Unreachable as exc:
            status, reason = "unreachable", str(exc)
        except Exception as exc:  # noqa: BLE001 - a probe never raises: it says what failed
            status, reason = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            if self._client is not None:
                await asyncio.shield(self._client.aclose())
        elapsed = round(time.monotonic() - started, 3)
        reason = " ".join(reason.split())[:200]  # one line: the findings are printed a line each
        return replace(self.found, status=status, reason=reason, elapsed=elapsed)

    def _note(self, **found: Any) -> None:
        self.found = replace(self.found, **found)

    async def _steps(self) -> None:
        heard = await self._ask("tools-streamed", [PROBE_TOOL], stream=True)
        streamed = heard.answered and not heard.error
        if not streamed:
            heard = await self._ask("tools", [PROBE_TOOL], stream=False)
        if heard.refused_tools:
            self._note(tools="no")
        elif heard.answered and not heard.error:
            # a stream that worked says nothing of streamed calls unless one came in it
            seen = "yes" if heard.calls else "unknown"
            self._note(tools="yes", streamed_calls=seen if streamed else "no")
            self._calls(heard)
        await self._chat()
        if self.found.tools == "no" and self.found.chat == "yes":
            text = await self._ask("text-calls", [], stream=False, system=True)
            found = find_calls(text.text, [PROBE_TOOL]) if text.answered else None
            self._note(text_calls="yes" if found is not None else "no")

    def _calls(self, heard: Heard) -> None:
        """How the model called the tool: structured calls, or calls written in its text."""
        count = heard.calls
        if count == 0:
            written = find_calls(heard.text, [PROBE_TOOL])
            self._note(calls_in_text="yes" if written else "no")
            count = len(written.calls) if written else 0
        else:
            self._note(calls_in_text="no")
        if count:
            self._note(several_calls="yes" if count > 1 else "no")

    async def _chat(self) -> None:
        heard = await self._ask("chat", [], stream=False)
        if not heard.answered or heard.error:
            self._note(chat="no")
            return
        speed = None
        if heard.completion_tokens and heard.seconds > 0:
            speed = round(heard.completion_tokens / heard.seconds, 1)
        seen = self.found.reasoning  # `_ask` notes the field of any request's thoughts
        self._note(
            chat="yes",
            tokens_per_second=speed,
            reasoning=seen if seen in ("reasoning_content", "reasoning") else "none",
            think_tags="yes" if "<think>" in heard.text else "no",
        )

    def _body(self, tools: list[dict[str, Any]], *, stream: bool, system: bool) -> dict[str, Any]:
        if system:
            messages = [
                {"role": "system", "content": describe_text_calls([PROBE_TOOL]).strip()},
                {"role": "user", "content": TEXT_ASK},
            ]
        else:
            messages = [{"role": "user", "content": TOOLS_ASK if tools else CHAT_ASK}]
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "stream": stream,
            "max_tokens": 64 if tools or system else 16,
            "temperature": 0,
        }
        if tools:
            body["tools"] = tools
            if self.tool_choice:
                body["tool_choice"] = "auto"
        return body

    async def _ask(
        self, step: str, tools: list[dict[str, Any]], *, stream: bool, system: bool = False
    ) -> Heard:
        """One request; what was heard (never raises but `Unreachable` and a timeout). Tools
        go with `tool_choice: "auto"`, as the provider sends them (llama-cpp-python leaves
        the tools out of the prompt without it); a server that refuses the field (400 naming
        it) is asked again without it, as the provider does."""
        heard = await self._once(step, tools, stream=stream, system=system)
        if tools and self.tool_choice and heard.status == 400 and "tool_choice" in heard.error:
            self.tool_choice = False
            heard = await self._once(step, tools, stream=stream, system=system)
        return heard

    async def _once(
        self, step: str, tools: list[dict[str, Any]], *, stream: bool, system: bool
    ) -> Heard:
        import httpx

        heard = Heard()
        body = json.dumps(self._body(tools, stream=stream, system=system)).encode()
        headers = {**self.headers, PROBE_HEADER: step, "Content-Type": "application/json"}
        started = time.monotonic()
        try:
            async with asyncio.timeout(self.request_bound):
                await self._exchange(heard, body, headers, stream)
        except TimeoutError:
            heard.error = f"no whole answer within {self.request_bound:g} s"
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise Unreachable(" ".join(connection_problem(self.base_url, exc)).strip()) from None
        except httpx.HTTPError as exc:
            heard.error = f"{type(exc).__name__}: {exc}"
        heard.seconds = time.monotonic() - started
        if self.found.reasoning in ("unknown", "none") and heard.reasoning:
            self._note(reasoning=heard.reasoning)
        return heard

    async def _exchange(self, heard: Heard, body: bytes, headers: dict[str, str], stream: bool):  # noqa: ANN202
        from mm_tui.engine.sse import SseDecoder

        async with self._http().stream(
            "POST", self.base_url + "/chat/completions", content=body, headers=headers
        ) as resp:
            heard.status = resp.status_code
            if resp.status_code != 200:
                heard.error = server_error_text(await _head(resp)) or resp.reason_phrase
                return
            kind = resp.headers.get("content-type", "").split(";")[0].strip().lower()
            if not stream or kind == "application/json":
                try:
                    heard.take_object(json.loads(await _head(resp)), "message")
                except ValueError:
                    heard.error = "an answer that is not JSON"
                return
            sse = SseDecoder()
            read = 0
            async for raw in resp.aiter_bytes():
                for obj in sse.feed(raw):
                    heard.take_object(obj, "delta")
                read += len(raw)
                if read > MAX_ANSWER or sse.done:
                    break
            heard.answered |= sse.done
            if not sse.seen_data:
                heard.error = "an empty answer to a streamed request"

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            from mm_tui.engine.tls import tls_context

            trust_env = not is_loopback(self.base_url)
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.request_bound),
                trust_env=trust_env,
                verify=tls_context(),
            )
        return self._client


async def _head(resp: httpx.Response) -> bytes:
    """The answer's body, or its first MAX_ANSWER bytes: a server that sends more than a probe
    asks for is not read to its end."""
    data = bytearray()
    async for piece in resp.aiter_bytes():
        data += piece
        if len(data) > MAX_ANSWER:
            break
    return bytes(data[:MAX_ANSWER])


def _load_http() -> None:
    """The HTTP client's modules, as engine/provider.py's `prepare` loads them (and in the same
    order, packages first: core/preload.py says why)."""
    from mm_tui.core.preload import import_in_order
    from mm_tui.engine.provider import HTTP_MODULES

    import_in_order(*HTTP_MODULES)
