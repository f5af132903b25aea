"""Make the corpus of ordinary answers (tests/engine/text_calls_corpus/ordinary.jsonl): real
texts with JSON, code blocks, XML and Markdown in which no tool call may be found.

The texts are excerpts of the READMEs and package descriptions on this machine: the METADATA
of the packages installed in the project's virtual environment, and the README.md files of the
npm packages the tests install (tests/*/node_modules). Each document is cut at its headings;
a section that holds a fenced block, a JSON object or an XML/HTML tag is kept (cut to
MAX_CHARS at a line's end), and so is, alone, each fenced block, as a reply that is nothing
but a block would be, and the text of each JSON block without its fence, as a reply that is
nothing but JSON. Every text with JSON or XML in it is kept, then others evenly. Texts are taken in a fixed order, so the file is
the same on the same packages.

Run: .venv/bin/python tools/ordinary_answers_corpus.py [SITE_PACKAGES] [NODE_MODULES...]
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "engine" / "text_calls_corpus" / "ordinary.jsonl"
MAX_CHARS = 700
WANTED = 600
_HEADING = re.compile(r"^(?=#{1,3} )", re.M)
_FENCE = re.compile(r"^```[^\n]*\n.*?^```[ \t]*$", re.M | re.S)
_RICH = re.compile(r"\{\s*\"|</\w|```json|```xml")
_INTERESTING = re.compile(r"```|\{\s*\"|<[A-Za-z][\w:-]*[ >/]|\[\w+\]")


def documents(site: Path, node_folders: list[Path]) -> list[tuple[str, str]]:
    docs = []
    for meta in sorted(site.glob("*.dist-info/METADATA")):
        text = meta.read_text(errors="replace")
        head, _, body = text.partition("\n\n")
        if body.strip():
            docs.append((f"pypi {meta.parent.name.split('-')[0]} METADATA", body))
    for folder in node_folders:
        for readme in sorted(folder.glob("**/README.md")):
            if readme.stat().st_size < 200_000:
                name = str(readme.parent.relative_to(folder))
                docs.append((f"npm {name} README.md", readme.read_text(errors="replace")))
    return docs


# a changelog citing its tracker by number: the project's files cite none a reader can't open
_TRACKER = re.compile(r"issues? #?[0-9]+", re.IGNORECASE)


def excerpts(source: str, text: str) -> list[dict[str, str]]:
    return [e for e in _excerpts(source, text) if not _TRACKER.search(e["text"])]


def _excerpts(source: str, text: str) -> list[dict[str, str]]:
    out = []
    for section in _HEADING.split(text):
        section = section.strip()
        if len(section) > 40 and _INTERESTING.search(section):
            out.append({"source": source, "text": _cut(section)})
        for block in _FENCE.findall(section):
            if len(block) > 30:
                out.append({"source": f"{source} (a fenced block)", "text": _cut(block)})
            first, _, inner = block.partition("\n")
            if first.strip("`").strip().lower() in ("json", "jsonc", "json5"):
                inner = inner.rstrip().removesuffix("```")
                out.append({"source": f"{source} (a JSON block's text)", "text": _cut(inner)})
    return out


def _cut(text: str) -> str:
    if len(text) <= MAX_CHARS:
        return text
    end = text.rfind("\n", 0, MAX_CHARS)
    return text[: end if end > 0 else MAX_CHARS]


def main() -> None:
    site = (
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else next((ROOT / ".venv" / "lib").glob("*/site-packages"))
    )
    node = [Path(p) for p in sys.argv[2:]] or sorted(ROOT.glob("tests/*/node_modules"))
    found: list[dict[str, str]] = []
    seen: set[str] = set()
    for source, text in documents(site, node):
        for excerpt in excerpts(source, text):
            if excerpt["text"] not in seen:
                seen.add(excerpt["text"])
                found.append(excerpt)
    # every text with JSON or XML in it, then the others evenly
    rich = [e for e in found if _RICH.search(e["text"])]
    others = [e for e in found if not _RICH.search(e["text"])]
    room = max(0, WANTED - len(rich))
    step = max(1, len(others) // room) if room else len(others) + 1
    chosen = (rich + others[::step])[:WANTED]
    with OUT.open("w") as file:
        for record in chosen:
            file.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"{len(chosen)} of {len(found)} excerpts -> {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
