"""What the model is told of the arguments of each built-in tool: the JSON schemas of their
declarations (`Tool.parameters_schema`), written out so that declaring the tools needs no
pydantic: a stand-in for its `model_json_schema()`, see docs/performance.md. The pydantic
classes that validate a call (args.py) take their descriptions from here, and pydantic makes
these same schemas of them (tests/tools/test_tool_args.py)."""

from __future__ import annotations

from typing import Any

BASH: dict[str, Any] = {
    "properties": {
        "command": {
            "description": (
                "The shell command to run with `bash -c` in the working directory. Each call "
                "is a new shell: `cd` and variables do not carry over, so chain with `&&`. "
                "There is no stdin and no terminal; the call stops after the timeout."
            ),
            "type": "string",
        }
    },
    "required": ["command"],
    "type": "object",
}


READ_FILE: dict[str, Any] = {
    "properties": {
        "path": {
            "description": "File path, relative to the working directory.",
            "type": "string",
        },
        "start": {
            "default": 0,
            "description": "First line to read (1-based); 0 = from the start.",
            "type": "integer",
        },
        "end": {
            "default": 0,
            "description": "Last line to read (1-based, inclusive); 0 = to the end.",
            "type": "integer",
        },
        "numbered": {
            "default": False,
            "description": (
                "Prefix each line with its number, as `12 │ text`; useful before edit_file."
            ),
            "type": "boolean",
        },
    },
    "required": ["path"],
    "type": "object",
}


WRITE_FILE: dict[str, Any] = {
    "properties": {
        "path": {
            "description": (
                "File path, relative to the working directory; missing folders are created."
            ),
            "type": "string",
        },
        "content": {
            "description": (
                "The whole new content of the file: it replaces everything. To change a few "
                "lines of an existing file, edit_file is safer."
            ),
            "type": "string",
        },
    },
    "required": ["path", "content"],
    "type": "object",
}


# The edit object written in place of a `$ref`: some model servers do not follow one.
EDIT_FILE: dict[str, Any] = {
    "properties": {
        "path": {
            "description": "Path of an existing file, relative to the working directory.",
            "type": "string",
        },
        "edits": {
            "description": (
                "Replacements {old, new}, all resolved against the original file (not one "
                "after the other); no two may touch the same text."
            ),
            "items": {
                "properties": {
                    "old": {
                        "description": (
                            "The text to replace, copied from the file: it must appear "
                            "exactly once. Include a few surrounding lines when a short "
                            "piece would appear more than once."
                        ),
                        "type": "string",
                    },
                    "new": {
                        "description": ("The replacement; an empty string deletes the old text."),
                        "type": "string",
                    },
                },
                "required": ["old", "new"],
                "type": "object",
            },
            "type": "array",
        },
        "dry_run": {
            "default": False,
            "description": "Report what would change, write nothing.",
            "type": "boolean",
        },
    },
    "required": ["path", "edits"],
    "type": "object",
}


READ_SKILL: dict[str, Any] = {
    "properties": {
        "name": {
            "description": "Skill name, exactly as listed in the tool description.",
            "type": "string",
        }
    },
    "required": ["name"],
    "type": "object",
}


ASK_AGENT: dict[str, Any] = {
    "properties": {
        "agent": {
            "description": (
                "The agent to ask: one of the names listed under Agents in this description."
            ),
            "type": "string",
        },
        "prompt": {
            "description": (
                "The task, complete and self-contained: what to do, where, and what to answer with."
            ),
            "type": "string",
        },
        "with_context": {
            "default": False,
            "description": (
                "Send this conversation before the prompt: the history the turn started "
                "from (questions, answers, one line per tool call, never tool outputs), "
                "capped at maxOutput characters, newest kept."
            ),
            "type": "boolean",
        },
    },
    "required": ["agent", "prompt"],
    "type": "object",
}


TODO: dict[str, Any] = {
    "properties": {
        "steps": {
            "description": "The whole list, in order, every time (at most 20 steps).",
            "items": {
                "properties": {
                    "step": {"description": "What to do, in a few words.", "type": "string"},
                    "state": {
                        "description": "pending, in_progress (one at a time) or done.",
                        "enum": ["pending", "in_progress", "done"],
                        "type": "string",
                    },
                },
                "required": ["step", "state"],
                "type": "object",
            },
            "type": "array",
        }
    },
    "required": ["steps"],
    "type": "object",
}


FIND_TOOL: dict[str, Any] = {
    "properties": {
        "query": {
            "description": "Words of what the tool should do, or of its name.",
            "type": "string",
        }
    },
    "required": ["query"],
    "type": "object",
}
