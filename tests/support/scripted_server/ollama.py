"""Ollama's models and scheduler, as far as the context window goes: what a scripted server
plays when it is given `ollama=OllamaModels(...)`.

What it does, and where Ollama does the same (github ollama/ollama):

- The context a request runs with (server/routes.go, `modelOptions`): the request's
  `options.num_ctx`, else the model's Modelfile `num_ctx`, else OLLAMA_CONTEXT_LENGTH (`env_ctx`),
  else the default (`default_ctx`, 4,096 below 24 GiB of VRAM). The OpenAI endpoint sends no
  options of the kind (openai/openai.go): a `/v1/chat/completions` request runs with the model's.
  With none of the three set the size is "automatic" (`usesAutomaticNumCtx`).
- A reload (server/sched.go, `needsReload`): a runner is keyed by the weights it runs
  (`schedulerModelKey`: the model's path, which a copy made by /api/create shares); a request
  for those weights reloads it when its context (capped at what the model was trained for,
  `effectiveContext`) differs from the runner's, unless both are automatic. Each load is
  counted in `loads` as (model, context).
- `memory_ctx`: the most this machine can load; a runner asked for more gets that much (Ollama
  lowers an automatic context when a load runs out of memory, `reduceAutoNumCtxForLoadOOM`; here
  any, to play a server that reports a smaller window). It keeps what it was asked for, so
  requests asking the same do not reload it.
- GET /api/ps lists the loaded runner under the name of the model that loaded it, with its
  `context_length` (since 0.9.7; `reports_context=False` plays an older one without it).
- POST /api/create with `from` and `parameters` (since 0.5.5) copies a model: the same weights,
  its parameters merged over the model's (server/create.go, `setParameters`); `refuse_create`
  answers it with that (status, body) instead.
- GET /api/tags and /v1/models list the models; POST /api/show tells one (404 when unknown);
  POST /api/generate (an empty prompt only loads: "done_reason": "load") and /api/chat answer
  "ok" after scheduling with their `options`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from .native import _OLLAMA_DIGEST, _ollama_name, _ollama_ps_entry, _ollama_show


@dataclass
class _Model:
    params: dict[str, Any]
    weights: str


@dataclass
class _Runner:
    model: str
    weights: str
    asked: int  # the context the runner was loaded for (what needsReload compares)
    context: int  # what it really has (what /api/ps says)
    automatic: bool


@dataclass
class OllamaModels:
    """The models Ollama has (`models`, each trained for `trained` tokens) and the one it has
    loaded. Every figure a test reads: `loads`, `creates`, `runner_context`."""

    models: tuple[str, ...] = ("scripted-model",)
    trained: int = 131072
    default_ctx: int = 4096
    env_ctx: int | None = None
    memory_ctx: int | None = None
    reports_context: bool = True
    refuse_create: tuple[int, Any] | None = None
    model_num_ctx: dict[str, int] = field(default_factory=lambda: {})
    loads: list[tuple[str, int]] = field(default_factory=lambda: [])
    creates: list[Any] = field(default_factory=lambda: [])

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._models: dict[str, _Model] = {}
        for n, name in enumerate(self.models):
            params: dict[str, Any] = {"stop": ["<|eot_id|>"]}
            if name in self.model_num_ctx:
                params["num_ctx"] = self.model_num_ctx[name]
            self._models[_ollama_name(name)] = _Model(params, f"sha256-weights-{n}")
        self._runner: _Runner | None = None

    # -- what a test reads --------------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        with self._lock:
            return list(self._models)

    @property
    def runner_context(self) -> int | None:
        with self._lock:
            return self._runner.context if self._runner is not None else None

    def params(self, name: str) -> dict[str, Any]:
        with self._lock:
            return dict(self._models[_ollama_name(name)].params)

    # -- the scheduler ------------------------------------------------------------------------

    def _schedule(self, name: str, options: Any) -> bool:
        """Run a request for `name` with `options`; False when there is no such model."""
        with self._lock:
            model = self._models.get(_ollama_name(name))
            if model is None:
                return False
            asked_here = isinstance(options, dict) and "num_ctx" in options
            ctx = options["num_ctx"] if asked_here else model.params.get("num_ctx")
            automatic = ctx is None and self.env_ctx is None
            if ctx is None:
                ctx = self.env_ctx if self.env_ctx is not None else self.default_ctx
            asked = min(int(ctx), self.trained)
            runner = self._runner
            if runner is not None and runner.weights == model.weights:
                if runner.asked == asked or (runner.automatic and automatic):
                    return True
            context = min(asked, self.memory_ctx) if self.memory_ctx else asked
            self._runner = _Runner(_ollama_name(name), model.weights, asked, context, automatic)
            self.loads.append((_ollama_name(name), context))
            return True

    def chat_completion(self, body: Any) -> tuple[int, Any] | None:
        """A `/v1/chat/completions` request scheduled (no options: openai/openai.go sets no
        num_ctx); the refusal of an unknown model, else None (the script answers)."""
        name = body.get("model") if isinstance(body, dict) else None
        if isinstance(name, str) and self._schedule(name, None):
            return None
        message = f'model "{name}" not found, try pulling it first'
        return 404, {"error": {"message": message, "type": "api_error", "param": None}}

    # -- the native endpoints -----------------------------------------------------------------

    def answer(self, method: str, path: str, body: Any) -> Any:
        """What Ollama answers at `path`, or None for a route it does not have here."""
        name = body.get("model") if isinstance(body, dict) else None
        if (method, path) == ("GET", "/api/ps"):
            return {"models": self._ps()}
        if (method, path) in (("GET", "/api/tags"), ("GET", "/v1/models")):
            return self._listed(path)
        if (method, path) == ("POST", "/api/show"):
            return self._show(name)
        if (method, path) == ("POST", "/api/create"):
            return self._create(body)
        if (method, path) in (("POST", "/api/generate"), ("POST", "/api/chat")):
            options = body.get("options") if isinstance(body, dict) else None
            if not isinstance(name, str) or not self._schedule(name, options):
                return 404, {"error": f"model '{name}' not found"}
            if path == "/api/chat":
                message = {"role": "assistant", "content": "ok"}
                return {"model": name, "message": message, "done": True, "done_reason": "stop"}
            loading = not (isinstance(body, dict) and body.get("prompt"))
            said, reason = ("", "load") if loading else ("ok", "stop")
            return {"model": name, "response": said, "done": True, "done_reason": reason}
        return None

    def _ps(self) -> list[dict[str, Any]]:
        with self._lock:
            runner = self._runner
        if runner is None:
            return []
        entry = _ollama_ps_entry(runner.model, runner.context)
        if not self.reports_context:
            entry.pop("context_length")
        return [entry]

    def _listed(self, path: str) -> dict[str, Any]:
        names = self.names
        if path == "/v1/models":
            cards = [{"id": n, "object": "model", "owned_by": "library"} for n in names]
            return {"object": "list", "data": cards}
        return {"models": [{"name": n, "model": n, "digest": _OLLAMA_DIGEST} for n in names]}

    def _show(self, name: Any) -> Any:
        if not isinstance(name, str) or not name:
            return 400, {"error": "model is required"}
        with self._lock:
            model = self._models.get(_ollama_name(name))
        if model is None:
            return 404, {"error": f"model '{name}' not found"}
        return _ollama_show(self.trained, model.params.get("num_ctx"))

    def _create(self, body: Any) -> Any:
        self.creates.append(body)
        if self.refuse_create is not None:
            return self.refuse_create
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            return 400, {"error": "invalid model name"}
        source = body.get("from")
        if not isinstance(source, str):
            return 400, {"error": "neither 'from' or 'files' was specified"}
        with self._lock:
            base = self._models.get(_ollama_name(source))
            if base is None:
                return 404, {"error": f"model '{source}' not found"}
            params = {**base.params, **(body.get("parameters") or {})}
            self._models[_ollama_name(body["model"])] = _Model(params, base.weights)
        return {"status": "success"}
