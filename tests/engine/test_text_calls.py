"""Tool calls written as text: each form, each broken variant small models write, what is not a
call, the stream's gate, and the two corpus rates (tests/engine/text_calls_corpus/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mm_tui.engine.call_gate import CallGate
from mm_tui.engine.text_calls import FoundCalls, TextCall, find_calls
from mm_tui.tools import schemas

CORPUS = Path(__file__).parent / "text_calls_corpus"
TOOLS = [
    {"type": "function", "function": {"name": name, "description": name, "parameters": schema}}
    for name, schema in {
        "bash": schemas.BASH,
        "read_file": schemas.READ_FILE,
        "write_file": schemas.WRITE_FILE,
        "edit_file": schemas.EDIT_FILE,
        "todo": schemas.TODO,
    }.items()
]
LS = [TextCall("bash", {"command": "ls -la"})]


def calls_of(text: str) -> list[TextCall]:
    found = find_calls(text, TOOLS)
    return [] if found is None else list(found.calls)


def records(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (CORPUS / name).read_text().splitlines()]


# -- the forms --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # Qwen3-Coder, inside <tool_call> and without it
        "<tool_call>\n<function=bash>\n<parameter=command>\nls -la\n</parameter>\n</function>\n</tool_call>",
        "<function=bash>\n<parameter=command>\nls -la\n</parameter>\n</function>",
        # Hermes
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls -la"}}\n</tool_call>',
        # Mistral, both
        '[TOOL_CALLS][{"name": "bash", "arguments": {"command": "ls -la"}, "id": "a1b2c3d4e"}]',
        '[TOOL_CALLS]bash[ARGS]{"command": "ls -la"}',
        '[TOOL_CALLS]bash[CALL_ID]a1b2c3d4e[ARGS]{"command": "ls -la"}',
        # Llama 3: the python tag, and the bare JSON its templates ask for
        '<|python_tag|>{"name": "bash", "parameters": {"command": "ls -la"}}<|eom_id|>',
        '{"name": "bash", "parameters": {"command": "ls -la"}}',
        # bare or fenced JSON
        '  {"name": "bash", "arguments": {"command": "ls -la"}}\n',
        '```json\n{"name": "bash", "arguments": {"command": "ls -la"}}\n```',
        '```\n{"name": "bash", "arguments": {"command": "ls -la"}}\n```',
        '[{"name": "bash", "arguments": {"command": "ls -la"}}]',
        '{"type": "function", "function": {"name": "bash", "arguments": {"command": "ls -la"}}}',
    ],
)
def test_each_form_is_read(text: str) -> None:
    assert calls_of(text) == LS


@pytest.mark.parametrize(
    "text",
    [
        # unclosed tags at the end of the reply
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls -la"}}',
        "<tool_call>\n<function=bash>\n<parameter=command>\nls -la\n</parameter>\n",
        "<function=bash>\n<parameter=command>\nls -la",
        # a reply cut off inside the JSON
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls -la',
        '[TOOL_CALLS]bash[ARGS]{"command": "ls -la"',
        # single quotes, trailing commas, Python literals
        "<tool_call>\n{'name': 'bash', 'arguments': {'command': 'ls -la'}}\n</tool_call>",
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls -la",},}\n</tool_call>',
        '[TOOL_CALLS][{"name": "bash", "arguments": {"command": "ls -la"},},]',
        # the arguments as a JSON string
        '<tool_call>\n{"name": "bash", "arguments": "{\\"command\\": \\"ls -la\\"}"}\n</tool_call>',
        # a fence inside the tags
        '<tool_call>\n```json\n{"name": "bash", "arguments": {"command": "ls -la"}}\n```\n</tool_call>',
    ],
)
def test_broken_variants_are_repaired(text: str) -> None:
    assert calls_of(text) == LS


def test_python_literals_and_types_are_read_as_the_schema_says() -> None:
    text = "{'name': 'read_file', 'parameters': {'path': 'a.py', 'start': '3', 'numbered': True}}"
    assert calls_of(text) == [TextCall("read_file", {"path": "a.py", "start": 3, "numbered": True})]
    qwen = (
        "<function=read_file>\n<parameter=path>\na.py\n</parameter>\n"
        "<parameter=end>\n40\n</parameter>\n<parameter=numbered>\nTrue\n</parameter>\n</function>"
    )
    assert calls_of(qwen) == [TextCall("read_file", {"path": "a.py", "end": 40, "numbered": True})]


def test_a_qwen_parameter_keeps_its_text_exactly() -> None:
    """A string parameter is the text between the tags, less the one newline each side the
    template puts there: a file's own last newline and its quotes stay."""
    text = (
        "<tool_call>\n<function=write_file>\n<parameter=path>\nx.py\n</parameter>\n"
        '<parameter=content>\nprint("a")\n\n</parameter>\n</function>\n</tool_call>'
    )
    assert calls_of(text) == [TextCall("write_file", {"path": "x.py", "content": 'print("a")\n'})]


def test_nested_arguments_as_python_repr_from_a_qwen_template() -> None:
    """Qwen3-Coder's template writes a list with Jinja's `string`, Python's repr."""
    text = (
        "<function=edit_file>\n<parameter=path>\na.py\n</parameter>\n<parameter=edits>\n"
        "[{'old': 'x = 1', 'new': 'x = 2'}]\n</parameter>\n</function>"
    )
    assert calls_of(text) == [
        TextCall("edit_file", {"path": "a.py", "edits": [{"old": "x = 1", "new": "x = 2"}]})
    ]


def test_the_text_around_the_calls_is_left_over() -> None:
    text = 'Let me look.\n\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls -la"}}\n</tool_call>'
    assert find_calls(text, TOOLS) == FoundCalls(tuple(LS), "Let me look.")
    two = (
        "Two calls.\n<tool_call>\n"
        '{"name": "bash", "arguments": {"command": "ls -la"}}\n</tool_call>\n<tool_call>\n'
        '{"name": "read_file", "arguments": {"path": "a"}}\n</tool_call>'
    )
    found = find_calls(two, TOOLS)
    assert found is not None and found.rest == "Two calls."
    assert [c.name for c in found.calls] == ["bash", "read_file"]


# -- what is not a call -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # a tool that is not declared
        '<tool_call>\n{"name": "rm_rf", "arguments": {"path": "/"}}\n</tool_call>',
        '{"name": "python", "parameters": {"code": "print(1)"}}',
        # a required argument missing, a wrong type, a key the schema does not know
        '<tool_call>\n{"name": "bash", "arguments": {}}\n</tool_call>',
        '<tool_call>\n{"name": "bash", "arguments": {"command": ["ls"]}}\n</tool_call>',
        '{"name": "read_file", "parameters": {"path": "a", "start": "three"}}',
        '{"name": "bash", "arguments": {"command": "ls", "cwd": "/"}}',
        '{"name": "todo", "arguments": {"steps": [{"step": "a", "state": "maybe"}]}}',
        # a call object with more than a call's keys, or without arguments
        '{"name": "bash", "arguments": {"command": "ls"}, "version": "1.0"}',
        '{"name": "bash"}',
        # JSON in prose, or a fenced block among others
        'Send {"name": "bash", "arguments": {"command": "ls"}} to the server.',
        '```json\n{"name": "bash", "arguments": {"command": "ls"}}\n```\nand\n```sh\nls\n```',
        '```python\n{"name": "bash", "arguments": {"command": "ls"}}\n```',
        # one of two calls does not check: neither runs
        '[{"name": "bash", "arguments": {"command": "ls"}}, {"name": "bash", "arguments": {}}]',
        # a tag named in prose, code after the python tag, JSON that is not JSON
        "The model writes <tool_call> before each call.",
        "<|python_tag|>import os\nprint(os.listdir())",
        "{name: bash, arguments: {command: ls}}",
        "",
    ],
)
def test_what_is_not_a_call(text: str) -> None:
    assert find_calls(text, TOOLS) is None


def test_no_tools_declared_no_calls() -> None:
    text = '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>'
    assert find_calls(text, []) is None


# -- the corpus -------------------------------------------------------------------------------


def test_the_intended_calls_of_the_corpus_are_recovered() -> None:
    """Completions rendered through real chat templates and the broken variants made of them
    (tools/text_calls_corpus.py): at least 95% of the intended calls come back exactly."""
    wanted = recovered = 0
    for record in records("calls.jsonl"):
        intended = [TextCall(c["name"], c["arguments"]) for c in record["calls"]]
        wanted += len(intended)
        got = calls_of(record["text"])
        if len(got) == len(intended):
            recovered += sum(g == i for g, i in zip(got, intended, strict=True))
    forms = {r["form"].split("/")[0] for r in records("calls.jsonl")}
    assert forms >= {"qwen3-coder", "hermes-3", "mistral-nemo", "devstral", "llama-3.1"}
    assert wanted >= 500
    assert recovered / wanted >= 0.95, f"{recovered} of {wanted}"


def test_no_call_is_invented_from_ordinary_answers() -> None:
    """Real README and package texts with JSON, code, XML and Markdown
    (tools/ordinary_answers_corpus.py): not one call."""
    texts = [r["text"] for r in records("ordinary.jsonl")]
    assert len(texts) >= 500
    invented = [t[:80] for t in texts if find_calls(t, TOOLS) is not None]
    assert invented == []


# -- the stream's gate ------------------------------------------------------------------------


def streamed(text: str, size: int) -> tuple[str, CallGate]:
    """What the gate lets through of `text` fed in pieces of `size` characters."""
    gate = CallGate(TOOLS)
    return "".join(gate.feed(text[i : i + size]) for i in range(0, len(text), size)), gate


@pytest.mark.parametrize("size", [1, 4, 17])
def test_the_gate_lets_every_ordinary_answer_through_whole(size: int) -> None:
    for record in records("ordinary.jsonl")[::3]:
        text = record["text"]
        shown, gate = streamed(text, size)
        assert shown + gate.finish(find_calls(text, TOOLS)) == text


@pytest.mark.parametrize("size", [1, 4, 17])
def test_the_gate_shows_nothing_of_a_call(size: int) -> None:
    """Of a reply that is a call, only the answer's text before it is shown, never the call."""
    for record in records("calls.jsonl")[::5]:
        text = record["text"]
        found = find_calls(text, TOOLS)
        assert found is not None
        shown, gate = streamed(text, size)
        assert found.rest.startswith(shown.rstrip()), (record["form"], shown)
        assert shown.strip() == "" or shown.strip() in found.rest


def test_the_gate_holds_a_block_until_it_is_decided() -> None:
    gate = CallGate(TOOLS)
    assert gate.feed("Here:\n```js") == "Here:\n"
    assert gate.feed('on\n{"a": 1}\n') == ""
    assert (
        gate.feed("```\nDone. `x` <b>y</b> [z](w)")
        == '```json\n{"a": 1}\n```\nDone. `x` <b>y</b> [z](w)'
    )
    assert gate.finish(None) == ""


def test_the_gate_lets_prose_that_names_a_tag_through() -> None:
    gate = CallGate(TOOLS)
    assert gate.feed("Models write <tool_") == "Models write "
    assert gate.feed("call> tags") == "<tool_call> tags"


def test_the_text_after_a_call_is_shown_at_the_end() -> None:
    text = '```json\n{"name": "bash", "arguments": {"command": "ls -la"}}\n```\nThat lists them.'
    shown, gate = streamed(text, 4)
    assert shown == ""
    assert gate.finish(find_calls(text, TOOLS), text) == "That lists them."
    before = "Listing.\n\n\n\n"  # more blank lines than the answer keeps between its parts
    text = before + text
    shown, gate = streamed(text, 4)
    assert shown == before
    assert gate.finish(find_calls(text, TOOLS), text) == "\n\nThat lists them."


@pytest.mark.parametrize(
    "text",
    [
        "[Bob's notes](notes.md) say it's done.",
        "{x} is a set; {'a'} too.",
        "```json\nnot JSON, it's prose\n```\nafter",
        "<|python_tag|>import os",
    ],
)
def test_what_opens_like_a_call_but_cannot_be_one_is_not_held_to_the_end(text: str) -> None:
    """An apostrophe after a `[` that opens the reply would make it look like an open string
    to the end: what follows an opening is looked at first."""
    shown, gate = streamed(text, 3)
    rest = gate.finish(None)
    assert shown + rest == text
    assert len(rest) <= 3, rest
