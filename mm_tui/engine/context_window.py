"""How many tokens one request may really hold, asked of the server rather than guessed.

A model's advertised context and the window a local server actually runs it with often differ by a
factor of thirty: below 24 GiB of VRAM Ollama runs a 128k model with 4,096 tokens unless told
otherwise, llama.cpp splits
`-c` between its slots, LM Studio loads models with whatever context its settings say. A request
past the real window is refused (llama.cpp, vLLM, LM Studio) or silently cut from the front
(Ollama), so mm asks every kind of server it knows, at once, and keeps the answer of the one that
is really there. When none says, a small table covers OpenAI's hosted models; when even that fails,
the server's refusal of an oversized request still states the number, and `window_from_error` reads
it.
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from mm_tui.core.frozen import frozen

if TYPE_CHECKING:
    pass

__all__ = [
    "ContextWindow",
    "known_window",
    "looks_like_ollama_show",
    "ollama_model_max",
    "ollama_names",
    "ollama_num_ctx",
    "read_context_window",
    "server_root",
    "window_from_error",
]


@frozen
class ContextWindow:
    """The window mm keeps a request inside, with where it came from so a person can check it."""

    tokens: int
    source: str
    note: str = ""


# Ollama's default context when neither num_ctx nor OLLAMA_CONTEXT_LENGTH is set. Since Ollama
# picks it by VRAM (server/routes.go: 4096 below 24 GiB, 32768 up to 48 GiB, 262144 above; the docs'
# context-length page says the same), the smallest tier is assumed until /api/ps shows the truth:
# a window too small costs an early summary, a window too big costs a silently truncated prompt.
OLLAMA_DEFAULT_CONTEXT = 4096
_SUGGESTED_CONTEXT = 32768  # what a note proposes: room for a coding agent's prompt and tools


# --------------------------------------------------------------------------- hosted models

# Longest prefix wins; a prefix matches the whole name or a name that goes on with "-" (dated
# snapshots such as gpt-4o-2024-08-06, or -mini / -nano variants of the same window). Figures as
# published for each model (OpenAI's model pages, as gateways' model tables repeat them).
_KNOWN: dict[str, int] = {
    "gpt-5": 400_000,
    "gpt-5.1": 400_000,
    "gpt-5.2": 400_000,
    "gpt-5-chat": 128_000,
    "gpt-5.1-chat": 128_000,
    "gpt-5.2-chat": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "chatgpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4-1106": 128_000,
    "gpt-4-0125": 128_000,
    "gpt-4-32k": 32_768,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-3.5-turbo-instruct": 4_096,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o1-preview": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
}


def known_window(model: str) -> int | None:
    """The context of an OpenAI-hosted model by its name, for servers that do not report one.

    Only the name after a last "/" counts, so a router's `openai/gpt-4o` is found too."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    best: tuple[int, int] | None = None
    for prefix, tokens in _KNOWN.items():
        if name == prefix or name.startswith(prefix + "-"):
            if best is None or len(prefix) > best[0]:
                best = (len(prefix), tokens)
    return best[1] if best else None


# --------------------------------------------------------------------------- error texts

# Each server words its refusal of an oversized request differently; the window is the number
# these name. Wordings, and where they come from:
#   llama-cpp-python (llama_cpp/llama.py, raised):  "Requested tokens (2100) exceed context window of 2048"
#   llama-cpp-python server (llama_cpp/server/errors.py), OpenAI, older vLLM:
#       "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens ..."
#   vLLM now: "This model's maximum context length is 2048 tokens. However, you requested 0 output
#       tokens and your prompt contains at least 2049 input tokens, ..."
#   vLLM max_tokens check: "... This model's maximum context length is 4096 tokens and your request
#       has 2778 input tokens (8000 > 4096 - 2778)."
#   vLLM: "... However, the model's context length is only 2048 tokens ..."
#   llama.cpp server (tools/server/server-context.cpp): "request (2100 tokens) exceeds the available
#       context size (2048 tokens), try increasing it", and older "input (2100 tokens) is larger than
#       the max context size (2048 tokens). skipping"; the JSON error carries "n_ctx" beside it.
#   LM Studio: "Trying to keep the first 2100 tokens when context the overflows. However, the model
#       is loaded with context length of only 2048 tokens, which is not enough. ..."
# Compiled at their first use (`re`'s cache), not with the module: they read a refusal, which
# most sessions never meet, and compiling them cost the way to ready about 1 ms.
_ERROR_PATTERNS = (
    r"exceeds? context window of\s+(\d+)",
    r"maximum context length is\s+(\d+)",
    r"available context size \((\d+) tokens?\)",
    r"max(?:imum)? context size \((\d+) tokens?\)",
    r"loaded with context length of only\s+(\d+)",
    r"context length is only\s+(\d+)",
)
_N_CTX_FIELD = r"""["']n_ctx["']\s*:\s*(\d+)"""


def window_from_error(text: str) -> int | None:
    """The window a server names when it refuses a request that does not fit, or None.

    `text` may be the whole error body (JSON or not) or just its message: llama.cpp's newer
    wording ("the request exceeds the available context size, try increasing it") names no number
    in its message, only in the `n_ctx` field beside it."""
    if not text:
        return None
    for pattern in _ERROR_PATTERNS:
        m = re.search(pattern, text, re.I)
        if m:
            return _positive(int(m.group(1)))
    m = re.search(_N_CTX_FIELD, text)
    if m:
        return _positive(int(m.group(1)))
    return None


# --------------------------------------------------------------------------- asking the server


def _positive(value: Any) -> int | None:
    """A token count from JSON: a positive int (a whole float too), never a bool or a string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and value > 0:
        return value
    return None


def server_root(base_url: str) -> str:
    """The server's root: the OpenAI-compatible base without its /v1 (Docker Model Runner's
    /engines/v1 and /engines/<backend>/v1 included), where the native endpoints live."""
    parts = urlsplit(base_url.strip().rstrip("/"))
    path = re.sub(r"(?:/engines(?:/[^/]+)?)?/v1$", "", parts.path)
    return urlunsplit((parts.scheme, parts.netloc, path.rstrip("/"), "", ""))


def _entry(data: Any, model: str) -> dict[str, Any] | None:
    """The entry of an OpenAI-style list (`{"data": [...]}`) whose id is the model."""
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return None
    for item in items:
        if isinstance(item, dict) and item.get("id") == model:
            return item
    return None


def ollama_names(model: str) -> set[str]:
    """The spellings Ollama uses for one model: `llama3.2` is `llama3.2:latest`."""
    names = {model}
    if ":" not in model.rsplit("/", 1)[-1]:
        names.add(model + ":latest")
    elif model.endswith(":latest"):
        names.add(model.removesuffix(":latest"))
    return names


def _props_window(data: Any) -> int | None:
    """llama.cpp's /props: the slot's n_ctx is what one request can use. Builds that report only
    the whole context at the top level share it between `total_slots` slots."""
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    if isinstance(settings, dict):
        n = _positive(settings.get("n_ctx"))
        if n:
            return n
    n = _positive(data.get("n_ctx"))
    if not n:
        return None
    slots = _positive(data.get("total_slots")) or 1
    return n // slots or None


def ollama_model_max(show: Any) -> int | None:
    """The context the model was trained for, from /api/show: Ollama runs it with no more."""
    info = show.get("model_info") if isinstance(show, dict) else None
    if not isinstance(info, dict):
        return None
    arch = info.get("general.architecture")
    if isinstance(arch, str):
        n = _positive(info.get(f"{arch}.context_length"))
        if n:
            return n
    for key, value in info.items():
        if isinstance(key, str) and key.endswith(".context_length"):
            n = _positive(value)
            if n:
                return n
    return None


_NUM_CTX = r"^\s*num_ctx\s+(\d+)\s*$"  # compiled at its first use, as _ERROR_PATTERNS


def ollama_num_ctx(show: Any) -> int | None:
    """The `num_ctx` of the model's Modelfile, from /api/show, or None when it sets none."""
    params = show.get("parameters") if isinstance(show, dict) else None
    if not isinstance(params, str):
        return None
    m = re.search(_NUM_CTX, params, re.M)
    return _positive(int(m.group(1))) if m else None


def _ollama_loaded(ps: Any, model: str) -> int | None:
    """Newer Ollama's /api/ps gives the context a loaded model really runs with (capped to what
    the model takes), which no other endpoint tells: OLLAMA_CONTEXT_LENGTH and the VRAM tier are
    the server's own."""
    models = ps.get("models") if isinstance(ps, dict) else None
    if not isinstance(models, list):
        return None
    names = ollama_names(model)
    for item in models:
        if isinstance(item, dict) and (item.get("name") in names or item.get("model") in names):
            return _positive(item.get("context_length"))
    return None


def looks_like_ollama_show(show: Any) -> bool:
    """A 200 from a web app that answers every path is not Ollama's /api/show."""
    return isinstance(show, dict) and (
        isinstance(show.get("model_info"), dict)
        or isinstance(show.get("details"), dict)
        or isinstance(show.get("modelfile"), str)
    )


def _ollama_window(model: str, show: Any, ps: Any) -> ContextWindow | None:
    model_max = ollama_model_max(show)
    loaded = _ollama_loaded(ps, model)
    if loaded:
        note = ""
        if model_max and loaded < model_max:
            note = (
                f"Ollama runs {model} with a {loaded:,}-token context (the model takes "
                f"{model_max:,}): start ollama serve with "
                f"OLLAMA_CONTEXT_LENGTH={min(model_max, _SUGGESTED_CONTEXT)}, "
                "or set num_ctx in a Modelfile"
            )
        return ContextWindow(loaded, "Ollama /api/ps", note)
    if not looks_like_ollama_show(show):
        return None
    num_ctx = ollama_num_ctx(show)
    if num_ctx:
        tokens = min(num_ctx, model_max) if model_max else num_ctx
        note = ""
        if model_max and tokens < model_max:
            note = (
                f"Ollama runs {model} with num_ctx {tokens:,} from its Modelfile (the model takes "
                f"{model_max:,}): set a larger num_ctx in the Modelfile and ollama create it again"
            )
        return ContextWindow(tokens, "Ollama /api/show", note)
    tokens = min(OLLAMA_DEFAULT_CONTEXT, model_max) if model_max else OLLAMA_DEFAULT_CONTEXT
    note = ""
    if model_max is None or tokens < model_max:
        takes = f" (the model takes {model_max:,})" if model_max else ""
        suggested = min(model_max or _SUGGESTED_CONTEXT, _SUGGESTED_CONTEXT)
        note = (
            f"Ollama likely runs {model} with its default {tokens:,}-token context{takes}: "
            f"start ollama serve with OLLAMA_CONTEXT_LENGTH={suggested}, "
            "or set num_ctx in a Modelfile"
        )
    return ContextWindow(tokens, "Ollama /api/show", note)


def _lmstudio_window(model: str, data: Any) -> ContextWindow | None:
    entry = _entry(data, model)
    if entry is None:
        return None
    model_max = _positive(entry.get("max_context_length"))
    loaded = _positive(entry.get("loaded_context_length"))
    if loaded:
        note = ""
        if model_max and loaded < model_max:
            note = (
                f"LM Studio loaded {model} with a {loaded:,}-token context (the model takes "
                f"{model_max:,}): load it again with a larger context length, e.g. "
                f"lms load {model} --context-length {min(model_max, _SUGGESTED_CONTEXT)}"
            )
        return ContextWindow(loaded, "LM Studio /api/v0/models", note)
    if model_max:
        note = (
            f"LM Studio has not loaded {model} yet and may load it with less than its "
            f"{model_max:,} tokens: set its context length in LM Studio, or "
            f"lms load {model} --context-length {min(model_max, _SUGGESTED_CONTEXT)}"
        )
        return ContextWindow(model_max, "LM Studio /api/v0/models", note)
    return None


ASKED_FIRST = {
    "llama.cpp": ("props",),
    "Ollama": ("show", "ps"),
    "vLLM": ("models",),
    "LM Studio": ("lmstudio",),
}
"""The endpoints of a server of a known kind, asked alone first (on the way to ready each
request costs mm and the server time); the others only if those tell no window."""


async def read_context_window(
    base_url: str,
    model: str,
    *,
    api_key: str | None = None,
    timeout: float = 2.0,
    provider: str = "",
) -> ContextWindow | None:
    """The window the server really runs `model` with, from whichever server answers, or None.

    Every kind of server is asked at once (after `provider`'s own endpoints: `ASKED_FIRST`), so
    a dead or slow endpoint costs at most `timeout`; nothing that goes wrong with the asking is
    raised, since not knowing is an ordinary outcome. When several answer, the most specific
    wins: llama.cpp /props, Ollama, vLLM, LM Studio, then the table of hosted models."""
    # Here, not at the top: the engine imports this module for the window's type and for
    # reading refusals, and the demo model asks no server at all.
    from mm_tui.engine.servers import JsonAsker, is_loopback

    base = base_url.strip().rstrip("/")
    try:
        root = server_root(base)
        trust_env = not is_loopback(base)
    except ValueError:  # not a URL at all ("http://[::1"): nothing to ask but the table
        return _from_table(model)

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with JsonAsker(timeout, headers, trust_env=trust_env) as asker:
        asks = {
            "props": lambda: asker.json(f"{root}/props"),
            "show": lambda: asker.json(f"{root}/api/show", {"model": model}),
            "ps": lambda: asker.json(f"{root}/api/ps"),
            "models": lambda: asker.json(f"{base}/models"),
            "lmstudio": lambda: asker.json(f"{root}/api/v0/models"),
        }
        answers: dict[str, Any] = {}
        for batch in (ASKED_FIRST.get(provider, ()), tuple(asks)):  # an unknown kind: one
            if names := tuple(name for name in batch if name not in answers):
                try:  # (not wait_for: a caller cancelled meanwhile left its gather unretrieved)
                    async with asyncio.timeout(timeout + 1.0):
                        got = await asyncio.gather(*(asks[name]() for name in names))
                except TimeoutError:
                    got = [None] * len(names)
                answers.update(zip(names, got, strict=True))
                if (found := _served_window(model, answers)) is not None:
                    return found
    return _from_table(model)


def _served_window(model: str, answers: dict[str, Any]) -> ContextWindow | None:
    """The window the answers so far tell, the most specific first (the table left out)."""
    n = _props_window(answers.get("props"))
    if n:
        return ContextWindow(n, "llama.cpp /props")
    found = _ollama_window(model, answers.get("show"), answers.get("ps"))
    if found:
        return found
    entry = _entry(answers.get("models"), model)
    n = _positive(entry.get("max_model_len")) if entry else None
    if n:
        return ContextWindow(n, "vLLM /v1/models")
    return _lmstudio_window(model, answers.get("lmstudio"))


def _from_table(model: str) -> ContextWindow | None:
    n = known_window(model)
    return ContextWindow(n, "known model table") if n else None
