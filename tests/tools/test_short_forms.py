"""The short form of a declaration (tools/short_forms.py), what a small window gets: the first
sentence, the required parameters with their exact types, the optional ones named."""

from __future__ import annotations

from typing import Any

from mm_tui.tools.read_file import ReadFileTool
from mm_tui.tools.read_skill import ReadSkillTool, Skill
from mm_tui.tools.short_forms import first_sentence, short_declaration


def test_the_first_sentence_is_the_first_stop_of_the_first_paragraph() -> None:
    assert first_sentence("Say it back. Then more.") == "Say it back."
    assert first_sentence("Ask a server (e.g. pylsp) what a name is. Then more.") == (
        "Ask a server (e.g. pylsp) what a name is."
    )
    assert (
        first_sentence("Read a file\nfrom the disk.\n\nArgs: path.") == "Read a file from the disk."
    )
    assert first_sentence("Lists: a, b\n\n- one. two.") == "Lists: a, b"
    assert first_sentence("v1.2 of the tool, no stop at all") == "v1.2 of the tool, no stop at all"
    long = "word " * 100
    assert len(first_sentence(long)) == 200 and first_sentence(long).endswith("…")


def test_the_required_parameters_keep_their_types_and_the_optional_are_named() -> None:
    short = ReadFileTool().short_declaration()
    assert short == {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": first_sentence(ReadFileTool().description())
            + " Optional: start, end, numbered.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }


def test_an_mcp_schema_loses_its_words_not_its_structure() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "title": "searchArguments",
        "properties": {
            "query": {"type": "string", "title": "Query", "description": "What to look for."},
            "filters": {
                "type": "array",
                "items": {"type": "object", "properties": {"k": {"type": "string"}}},
            },
            "limit": {"type": "integer", "default": 10, "description": "At most this many."},
        },
        "required": ["query", "filters"],
    }
    short = short_declaration("web__search", "Search the web.", schema)["function"]
    assert short["description"] == "Search the web. Optional: limit."
    assert short["parameters"] == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "filters": {
                "type": "array",
                "items": {"type": "object", "properties": {"k": {"type": "string"}}},
            },
        },
        "required": ["query", "filters"],
    }
    bare = short_declaration("x__y", "Do it.", {"type": "object"})["function"]
    assert bare["parameters"] == {"type": "object"} and bare["description"] == "Do it."


def test_a_list_of_skills_keeps_its_names(tmp_path) -> None:  # noqa: ANN001
    skills = {
        name: Skill(name=name, description=f"the {name} steps", path=tmp_path / f"{name}.md")
        for name in ("release", "review")
    }
    assert ReadSkillTool(skills).short_description() == "Read a skill: release, review."
