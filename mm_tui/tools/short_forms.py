"""The short form of a tool's declaration, for a model whose window the full forms would fill
before any work starts (engine/fixed_prompt.py decides when): the description cut to its first
sentence, the parameters' descriptions dropped, the optional parameters folded into one line of
the description. The required parameters keep their names and types exactly, so a call made
from the short form still validates; an optional one the model sends anyway is still taken."""

from __future__ import annotations

import re
from typing import Any

# a stop followed by a space or the end; not the stop of "e.g." or "i.e."
FIRST_SENTENCE = re.compile(r"(.+?(?<!\be\.g)(?<!\bi\.e)[.!?])(?=\s|$)", re.S)
MAX_SENTENCE = 200  # characters: a "sentence" without a stop is cut here
SCHEMA_WORDS = ("description", "title", "default", "examples", "$schema")


def first_sentence(text: str) -> str:
    """The first sentence of `text`'s first paragraph (a list after a colon is not part of it)."""
    paragraph = text.strip().split("\n\n", 1)[0].strip()
    found = FIRST_SENTENCE.match(paragraph)
    sentence = found.group(1) if found else paragraph
    sentence = " ".join(sentence.split())
    if len(sentence) > MAX_SENTENCE:
        sentence = sentence[: MAX_SENTENCE - 1].rstrip() + "…"
    return sentence


def bare(schema: Any) -> Any:
    """A schema without its words (descriptions, titles, defaults, examples): types and
    structure only, all the way down."""
    if isinstance(schema, dict):
        return {k: bare(v) for k, v in schema.items() if k not in SCHEMA_WORDS}
    if isinstance(schema, list):
        return [bare(v) for v in schema]
    return schema


def short_parameters(parameters: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The required parameters, bare; and the names of the optional ones, folded."""
    properties = parameters.get("properties")
    required = [r for r in parameters.get("required", []) if isinstance(r, str)]
    if not isinstance(properties, dict):
        return bare(parameters), []
    kept = {name: bare(prop) for name, prop in properties.items() if name in required}
    folded = [name for name in properties if name not in required]
    short: dict[str, Any] = {"type": "object", "properties": kept}
    if required:
        short["required"] = required
    return short, folded


def short_declaration(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """A function declaration in its short form (`description` is the tool's short one)."""
    params, folded = short_parameters(parameters)
    text = description
    if folded:
        text += f" Optional: {', '.join(folded)}."
    return {
        "type": "function",
        "function": {"name": name, "description": text, "parameters": params},
    }
