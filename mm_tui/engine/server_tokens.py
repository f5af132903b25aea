"""Tokens of a text as the model server counts them, where it has an endpoint for it:
llama.cpp's `POST /tokenize` (`{"content": …}` → `{"tokens": […]}`) and vLLM's
(`{"model": …, "prompt": …}` → `{"count": N, "tokens": […]}`), both at the server's root. Ollama
and LM Studio have none: the fixed prompt is then counted from the first request's usage
(engine/fixed_prompt.py). Which form the server takes is learned at the first count and kept;
a server that takes neither is not asked again."""

from __future__ import annotations

from typing import Any

from mm_tui.engine.context_window import server_root

LLAMA_CPP = "llama.cpp"
VLLM = "vLLM"


class ServerTokenizer:
    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 5.0) -> None:
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = timeout
        self.kind: str | None = None  # LLAMA_CPP or VLLM once one answered
        self.missing = False  # neither answered: the server has no tokenizer to ask

    def _bodies(self, text: str, model: str) -> list[tuple[str, dict[str, Any]]]:
        llama = (LLAMA_CPP, {"content": text, "add_special": False})
        vllm = (VLLM, {"model": model, "prompt": text, "add_special_tokens": False})
        if self.kind == VLLM:
            return [vllm]
        if self.kind == LLAMA_CPP:
            return [llama]
        return [llama, vllm]

    async def count(self, text: str, model: str) -> int | None:
        """The server's count of `text`'s tokens, or None when it has no tokenizer to ask (a
        server that counted once and fails now is asked again next time)."""
        if self.missing or not text:
            return None
        from mm_tui.engine.servers import JsonAsker, is_loopback

        try:
            url = server_root(self.base_url) + "/tokenize"
            trust_env = not is_loopback(self.base_url)
        except ValueError:
            self.missing = True
            return None
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        async with JsonAsker(self.timeout, headers, trust_env=trust_env) as asker:
            for kind, body in self._bodies(text, model):
                tokens = _count(await asker.json(url, body))
                if tokens is not None:
                    self.kind = kind
                    return tokens
        if self.kind is None:  # never counted: the usage of a request will count instead
            self.missing = True
        return None


def _count(data: Any) -> int | None:
    """The count in a /tokenize answer: vLLM's `count`, else the length of `tokens`; None for
    an answer of neither form, or an empty list (llama.cpp's answer to a body without
    `content`)."""
    if not isinstance(data, dict):
        return None
    count = data.get("count")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return count
    tokens = data.get("tokens")
    if isinstance(tokens, list) and tokens:
        return len(tokens)
    return None
