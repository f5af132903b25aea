"""Make the corpus of tool calls written as text (tests/engine/text_calls_corpus/calls.jsonl).

Each intended call (mm's own tools and arguments) is rendered through real models' chat
templates with jinja2, as Hugging Face's `apply_chat_template` renders them (a sandboxed
environment, trim_blocks and lstrip_blocks, `tojson` without ASCII escapes, `raise_exception`):
the completion is what the conversation with the assistant's call adds to the prompt, less the
end-of-turn token. The templates are the GGUF/tokenizer_config templates llama.cpp keeps in
`models/templates/` (repository ggml-org/llama.cpp; the copies read were those of the forks
ye-NX/llama.cpp at 1eeb523c and wbpxre150/llama.cpp at 12468465 for Qwen3-Coder.jinja): give
the folder that holds them. Beside the rendered ones, the broken variants small models write
are made by hand from them (tests/engine/text_calls_corpus/README.md says which).

Run: .venv/bin/python tools/text_calls_corpus.py TEMPLATES_FOLDER
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "engine" / "text_calls_corpus" / "calls.jsonl"

TEMPLATES = {
    "qwen3-coder": "Qwen3-Coder.jinja",
    "hermes-2-pro": "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja",
    "hermes-3": "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
    "qwen3": "Qwen-Qwen3-0.6B.jinja",
    "mistral-nemo": "mistralai-Mistral-Nemo-Instruct-2407.jinja",
    "mistral-small-3.2": "Mistral-Small-3.2-24B-Instruct-2506.jinja",
    "devstral": "unsloth-mistral-Devstral-Small-2507.jinja",
    "llama-3.1": "meta-llama-Llama-3.1-8B-Instruct.jinja",
    "llama-3.2": "meta-llama-Llama-3.2-3B-Instruct.jinja",
    "llama-3.3": "meta-llama-Llama-3.3-70B-Instruct.jinja",
}
COPIES = {file: "ye-NX/llama.cpp@1eeb523c" for file in TEMPLATES.values()}
COPIES["Qwen3-Coder.jinja"] = "wbpxre150/llama.cpp@12468465"
SINGLE_CALL = {"llama-3.1", "llama-3.2", "llama-3.3"}  # their templates refuse more than one
END_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|eom_id|>", "</s>", "<|end_of_text|>")

EDIT = {"old": "def main():\n    pass", "new": 'def main():\n    print("hello")'}
CALLS: list[tuple[str, list[tuple[str, dict[str, Any]]]]] = [
    ("", [("bash", {"command": "ls -la"})]),
    ("Let me look at the tests first.", [("bash", {"command": "pytest -q tests/ -x"})]),
    ("", [("bash", {"command": "grep -rn 'TODO' src/ | head -20"})]),
    ("", [("bash", {"command": "git log --oneline -5 && git status --short"})]),
    ("I'll check which Python is installed.", [("bash", {"command": "python3 --version"})]),
    (
        "",
        [("bash", {"command": "cat <<'EOF' > notes.txt\nfirst line\nsecond \"quoted\" line\nEOF"})],
    ),
    ("", [("bash", {"command": "find . -name '*.py' -newer setup.cfg"})]),
    ("", [("bash", {"command": "echo $HOME && printf '%s\\n' a b"})]),
    ("", [("read_file", {"path": "README.md"})]),
    ("", [("read_file", {"path": "src/app/main.py", "start": 10, "end": 40})]),
    ("Reading the config.", [("read_file", {"path": "pyproject.toml", "numbered": True})]),
    ("", [("read_file", {"path": "docs/guide.md", "start": 1, "end": 200, "numbered": False})]),
    ("", [("write_file", {"path": "hello.py", "content": 'print("hello, world")\n'})]),
    (
        "I'll write the module.",
        [("write_file", {"path": "pkg/util.py", "content": "def add(a, b):\n    return a + b\n"})],
    ),
    (
        "",
        [("write_file", {"path": "data/config.json", "content": '{"debug": true, "level": 3}\n'})],
    ),
    ("", [("edit_file", {"path": "main.py", "edits": [EDIT]})]),
    (
        "Fixing the typo.",
        [("edit_file", {"path": "README.md", "edits": [{"old": "teh", "new": "the"}]})],
    ),
    (
        "",
        [
            (
                "edit_file",
                {
                    "path": "app.py",
                    "edits": [{"old": "x = 1", "new": "x = 2"}, {"old": "y = 3", "new": ""}],
                    "dry_run": True,
                },
            )
        ],
    ),
    (
        "",
        [
            (
                "todo",
                {
                    "steps": [
                        {"step": "read the failing test", "state": "done"},
                        {"step": "fix the parser", "state": "in_progress"},
                        {"step": "run the tests", "state": "pending"},
                    ]
                },
            )
        ],
    ),
    ("", [("todo", {"steps": [{"step": "look around", "state": "pending"}]})]),
    ("", [("bash", {"command": "ls"}), ("read_file", {"path": "setup.py"})]),
    (
        "Two things to check.",
        [("read_file", {"path": "a.txt"}), ("read_file", {"path": "b.txt", "start": 5})],
    ),
    ("", [("bash", {"command": "mkdir -p build && cd build && cmake .."})]),
    ("", [("bash", {"command": "curl -s http://localhost:8080/health | jq ."})]),
    ("", [("read_file", {"path": "tests/test_été.py"})]),
    ("", [("write_file", {"path": "empty.txt", "content": ""})]),
    ("", [("bash", {"command": "sed -n '1,20p' src/index.ts"})]),
    ("Let me run the linter.", [("bash", {"command": "ruff check . --fix"})]),
    ("", [("read_file", {"path": "Makefile", "end": 30})]),
    (
        "",
        [("edit_file", {"path": "src/x.c", "edits": [{"old": "int i;", "new": "size_t i;"}]})],
    ),
]


def tools() -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    from mm_tui.tools import schemas

    named = {
        "bash": schemas.BASH,
        "read_file": schemas.READ_FILE,
        "write_file": schemas.WRITE_FILE,
        "edit_file": schemas.EDIT_FILE,
        "todo": schemas.TODO,
    }
    return [
        {"type": "function", "function": {"name": n, "description": n, "parameters": s}}
        for n, s in named.items()
    ]


def environment() -> Any:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise ValueError(message)

    def tojson(value: Any, indent: int | None = None, **_: Any) -> str:
        return json.dumps(value, ensure_ascii=False, indent=indent)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: "26 Jul 2024"
    return env


def completion(template: Any, content: str, calls: list[tuple[str, dict[str, Any]]]) -> str:
    """What the assistant's message with `calls` adds to the prompt, as the model writes it."""
    base = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Please help with the project."},
    ]
    tool_calls = [
        {"id": f"call{n:05d}", "type": "function", "function": {"name": name, "arguments": args}}
        for n, (name, args) in enumerate(calls)
    ]
    assistant = {"role": "assistant", "content": content, "tool_calls": tool_calls}
    common = {"tools": tools(), "bos_token": "<s>", "eos_token": "</s>", "date_string": ""}
    prompt = template.render(messages=base, add_generation_prompt=True, **common)
    whole = template.render(messages=[*base, assistant], add_generation_prompt=False, **common)
    if whole.startswith(prompt):
        text = whole[len(prompt) :]
    else:  # Mistral Nemo's moves the system message into the last request
        assert "[/INST]" in whole, "the prompt is not a prefix of the conversation"
        text = whole.rsplit("[/INST]", 1)[1]
    for token in END_TOKENS:
        text = text.rstrip("\n").removesuffix(token)
    return text.rstrip("\n")


def rendered(folder: Path) -> list[dict[str, Any]]:
    env = environment()
    out = []
    for form, file in TEMPLATES.items():
        template = env.from_string((folder / file).read_text())
        for content, calls in CALLS:
            if form in SINGLE_CALL and len(calls) > 1:
                continue
            text = completion(template, content, calls)
            out.append(
                _record(form, f"rendered: {COPIES[file]} models/templates/{file}", text, calls)
            )
    return out


def _record(form: str, source: str, text: str, calls: list[tuple[str, dict[str, Any]]]) -> dict:
    return {
        "form": form,
        "source": source,
        "text": text,
        "calls": [{"name": n, "arguments": a} for n, a in calls],
    }


def broken(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The variants small models write, made from the rendered completions by hand-written
    rules: each rule is one mistake."""
    out = []
    for record in records:
        text, form = record["text"], record["form"]
        for name, variant in _variants(form, text, record["calls"]):
            if variant is not None and variant != text:
                source = f"by hand ({name}) from the {form} rendering"
                out.append({**record, "form": f"{form}/{name}", "source": source, "text": variant})
    return out


def _variants(form: str, text: str, calls: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    single = len(calls) == 1
    first = calls[0]
    args = json.dumps(first["arguments"], ensure_ascii=False)
    py_args = repr(first["arguments"])
    out: list[tuple[str, str | None]] = []
    if form in ("hermes-3", "qwen3-coder"):
        out.append(("unclosed", text.removesuffix("</tool_call>").rstrip()))
    if form == "qwen3-coder":
        out.append(
            ("no outer tags", text.replace("<tool_call>\n", "").replace("\n</tool_call>", ""))
        )
        out.append(("unclosed function", text.split("</function>")[0].rstrip() if single else None))
    if form == "hermes-3" and single:
        head = f'<tool_call>\n{{"name": "{first["name"]}", "arguments": '
        out.append(
            (
                "single quotes",
                f"<tool_call>\n{{'name': '{first['name']}', 'arguments': {py_args}}}\n</tool_call>",
            )
        )
        out.append(
            ("trailing comma", f"{head}{args[:-1]}, }},}}\n</tool_call>" if args != "{}" else None)
        )
        out.append(
            (
                "arguments as a string",
                f"{head}{json.dumps(args, ensure_ascii=False)}}}\n</tool_call>",
            )
        )
        out.append(("cut off", f"{head}{args[:-1]}"))
        inner = text.removeprefix("<tool_call>\n").removesuffix("\n</tool_call>")
        out.append(("fenced inside the tags", f"<tool_call>\n```json\n{inner}\n```\n</tool_call>"))
    if form == "llama-3.1":
        out.append(("python_tag", f"<|python_tag|>{text}<|eom_id|>"))
        out.append(("python literals", f'{{"name": "{first["name"]}", "parameters": {py_args}}}'))
        out.append(("fenced", f"```json\n{text}\n```"))
        out.append(("fenced after prose", f"I will call the tool now.\n\n```json\n{text}\n```"))
        out.append(("unnamed fence", f"```\n{text}\n```"))
        out.append(("arguments key", f'{{"name": "{first["name"]}", "arguments": {args}}}'))
    if form == "mistral-nemo":
        out.append(("no id", text.replace(', "id": "call00000"', "")))
        out.append(("spaced", text.replace("[TOOL_CALLS][", "[TOOL_CALLS] [")))
    if form == "devstral" and single:
        out.append(("unclosed", text[:-1] if text.endswith("}") else None))
    return out


def main() -> None:
    folder = Path(sys.argv[1])
    records = rendered(folder)
    records += broken(records)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w") as file:
        for record in records:
            file.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"{len(records)} completions -> {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
