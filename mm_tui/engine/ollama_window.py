"""`contextWindow` kept by Ollama for the whole session, checked, and said when it cannot be.

Ollama's OpenAI endpoint takes no context size: openai/openai.go builds the native request's
options from the OpenAI fields alone (stop, max_tokens, temperature, seed, the penalties,
top_p), never `num_ctx`, so each request runs with the model's Modelfile `num_ctx`, else
OLLAMA_CONTEXT_LENGTH, else Ollama's default (4,096 below 24 GiB of VRAM: server/routes.go,
`modelOptions`). Its scheduler reloads the model whenever a request's runner options differ
from the loaded runner's (server/sched.go, `needsReload`: the options compared whole, `num_ctx`
among them). Loading the model once through the native API with `options.num_ctx` would so be
undone by the first OpenAI request (its `num_ctx` is the default: a reload), and `num_ctx` on
every request would mean the native protocol for the whole conversation.

So mm asks Ollama for a copy of the model whose Modelfile says the window, `<model>-mm<N>`
(POST /api/create with `from` and `parameters: {num_ctx: N}`; server/create.go reuses the
model's layers, weights included, and merges the parameters over the model's own), and sends
the OpenAI requests under that name. Every request then carries the same `num_ctx`, from the
copy's Modelfile, and the scheduler (which keys a runner by the weights' path, shared with the
copy) loads the model once for the session. Ollama before 0.5.5 took the Modelfile's text
instead (`modelfile`): it goes beside, and each version ignores the other's fields.

Whether it took is asked of /api/ps, whose `context_length` (since 0.9.7) is the context the
loaded runner really has: at start-up when the copy is loaded already, else after the first
answer (which loads it). When it did not take (an older Ollama that does not say, a copy
refused, a model that takes less, a runner loaded smaller) it is said once, with the fix."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from mm_tui.core.frozen import mutable
from mm_tui.engine.context_window import (
    looks_like_ollama_show,
    ollama_model_max,
    ollama_names,
    ollama_num_ctx,
    server_root,
)

__all__ = ["KeptWindow", "check_loaded", "copy_name", "keep_window"]

ASK_TIMEOUT = 2.0  # /api/show and /api/ps: small answers from this machine
CREATE_TIMEOUT = 30.0  # /api/create writes a manifest (reading the model's header first)
_MAX_SAID = 200  # characters of a refusal quoted


@mutable
class KeptWindow:
    """What mm asked Ollama for (`tokens`), the name the requests go out under (`served`),
    what start-up says of it, and whether /api/ps is still to be asked (`unchecked`)."""

    model: str
    served: str
    tokens: int
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    loaded: int | None = None  # the context /api/ps says the runner has
    unchecked: bool = True

    def warn(self, text: str) -> str | None:
        """Say `text` unless a warning was said already: one for the session is enough."""
        if self.warnings:
            return None
        self.warnings.append(text)
        return text


def copy_name(model: str, tokens: int) -> str:
    """The copy's name: `qwen2.5-coder:7b` → `qwen2.5-coder:7b-mm32768` (its tag grows),
    `llama3.2` → `llama3.2-mm32768`; a name that is such a copy already stays."""
    suffix = f"-mm{tokens}"
    return model if model.endswith(suffix) else model + suffix


def _asker(base_url: str, api_key: str | None, timeout: float) -> Any:
    from mm_tui.engine.servers import JsonAsker, is_loopback

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return JsonAsker(timeout, headers, trust_env=not is_loopback(base_url))


async def keep_window(
    base_url: str, model: str, tokens: int, *, api_key: str | None = None
) -> KeptWindow | None:
    """Have Ollama run `model` with `tokens` for the whole session (the module's docstring
    says how); None when the server is not Ollama (its /api/show does not answer as Ollama's,
    or it is reached over https: Ollama serves plain http, and Ollama's own cloud runs its
    models with their whole context). Nothing that goes wrong is raised: it is said in the
    warnings."""
    if not base_url.lower().startswith("http://"):
        return None  # Ollama serves plain http; a hosted API is not asked at every start
    try:
        root = server_root(base_url)
    except ValueError:
        return None
    async with _asker(base_url, api_key, ASK_TIMEOUT) as asker:
        show = await asker.json(f"{root}/api/show", {"model": model})
        if not looks_like_ollama_show(show):
            return None
        kept = _plan(model, tokens, show)
        if kept.served != model:
            async with _asker(base_url, api_key, CREATE_TIMEOUT) as creator:
                await _create(creator, root, kept)
        await _check(asker, root, kept, at_start=True)
    return kept


def _plan(model: str, tokens: int, show: Any) -> KeptWindow:
    """The window to ask for (Ollama runs a model with no more than it was trained for:
    server/sched.go, `effectiveContext`) and the name to ask under."""
    model_max = ollama_model_max(show)
    want = min(tokens, model_max) if model_max else tokens
    kept = KeptWindow(model, copy_name(model, want), want)
    if want < tokens:
        kept.warn(
            f"{model} takes at most {want:,} tokens: Ollama runs it with {want:,}, not the "
            f"{tokens:,} of contextWindow (set contextWindow to {want} or less)"
        )
    if ollama_num_ctx(show) == want:  # its own Modelfile says the window already
        kept.served = model
    return kept


async def _create(asker: Any, root: str, kept: KeptWindow) -> None:
    """Ask for the copy; when Ollama will not make it, the requests go to the model itself."""
    copy, n = kept.served, kept.tokens
    body = {
        "model": copy,
        "from": kept.model,
        "parameters": {"num_ctx": n},
        "modelfile": f"FROM {kept.model}\nPARAMETER num_ctx {n}\n",
        "stream": False,
    }
    answer = await asker.exchange(f"{root}/api/create", body)
    if answer is not None and answer[0] == 200:
        kept.notes.append(
            f"Ollama runs {kept.model} as {copy}, a copy with num_ctx {n} that shares its "
            f"weights: every request asks for the same {n:,}-token window, and the model loads once"
        )
        return
    kept.served = kept.model
    kept.warn(
        f"Ollama would not make {copy}, a copy of {kept.model} with num_ctx {n} "
        f"({_refusal(answer)}): it may run {kept.model} with its default context, not "
        f"{n:,} tokens. {_fix(kept.model, n)}"
    )


def _refusal(answer: tuple[int, Any] | None) -> str:
    if answer is None:
        return "no answer"
    status, data = answer
    said = data.get("error") if isinstance(data, dict) else None
    if isinstance(said, dict):  # an OpenAI-style error from something else on the port
        said = said.get("message")
    if not isinstance(said, str) or not said.strip():
        return f"HTTP {status}"
    said = " ".join(said.split())
    return f"HTTP {status}: {said[:_MAX_SAID]}{'…' if len(said) > _MAX_SAID else ''}"


def _fix(model: str, tokens: int) -> str:
    return (
        f"Start ollama serve with OLLAMA_CONTEXT_LENGTH={tokens}, or set PARAMETER num_ctx "
        f"{tokens} in a Modelfile FROM {model} and ollama create it"
    )


def _loaded(ps: Any, served: str) -> tuple[bool, int | None]:
    """Whether /api/ps lists `served`, and the context it says the runner has."""
    models = ps.get("models") if isinstance(ps, dict) else None
    names = ollama_names(served)
    for item in models if isinstance(models, list) else []:
        if isinstance(item, dict) and (item.get("name") in names or item.get("model") in names):
            n = item.get("context_length")
            ok = isinstance(n, int) and not isinstance(n, bool) and n > 0
            return True, n if ok else None
    return False, None


async def _check(asker: Any, root: str, kept: KeptWindow, *, at_start: bool) -> str | None:
    """Ask /api/ps what the runner has; the warning when it is less than asked (or unsaid)."""
    listed, context = _loaded(await asker.json(f"{root}/api/ps"), kept.served)
    if not listed:
        return None  # not loaded yet (or /api/ps did not answer): asked after an answer
    kept.unchecked = False
    if context is None:
        return kept.warn(
            f"Ollama does not say what context it loaded {kept.served} with (versions before "
            f"0.9.7 do not): mm cannot check that it runs with {kept.tokens:,} tokens. "
            f"{_fix(kept.model, kept.tokens)}, to be sure"
        )
    kept.loaded = context
    if context >= kept.tokens:
        if at_start:
            kept.notes.append(f"Ollama has {kept.served} loaded with {context:,} tokens")
        return None
    return kept.warn(
        f"Ollama loaded {kept.served} with {context:,} tokens, not the {kept.tokens:,} asked "
        f"(too little memory for more?): mm keeps each request within {context:,}. Set "
        f"contextWindow to {context} or less, or free memory (ollama ps lists what is "
        "loaded) and start mm again"
    )


async def check_loaded(
    base_url: str, kept: KeptWindow, *, api_key: str | None = None
) -> str | None:
    """After the first answer, which loaded the model: /api/ps asked once more when start-up
    found the model not loaded; the warning to say, or None. Asked once, whatever it says."""
    kept.unchecked = False
    async with _asker(base_url, api_key, ASK_TIMEOUT) as asker:
        return await _check(asker, server_root(base_url), kept, at_start=False)
