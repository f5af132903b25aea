"""Tool calls for a server that refuses tools (engine/text_call_prompt.py): the form the system
prompt describes is one the text-call reader reads back, and the history goes in that form."""

from __future__ import annotations

import json

from mm_tui.engine.text_call_prompt import TEXT_CALL_FORM, TextCallHistory, as_text
from mm_tui.engine.text_calls import find_calls

READ = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
}
CALLED = {
    "role": "assistant",
    "content": "Let me look.",
    "tool_calls": [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": "a.py"})},
        }
    ],
}


def test_the_description_names_the_form_and_each_tool() -> None:
    history = TextCallHistory()
    system = {"role": "system", "content": "You are mm."}
    first, *_ = history.messages([system], [READ])
    assert first["content"].startswith("You are mm." + TEXT_CALL_FORM)
    assert '- read_file: Read a file. Parameters: {"type": "object"' in first["content"]
    assert system == {"role": "system", "content": "You are mm."}  # the history kept as it was


def test_a_call_written_as_described_is_read_back() -> None:
    written = as_text(CALLED)
    assert "tool_calls" not in written
    found = find_calls(written["content"], [READ])
    assert found is not None and [(c.name, c.arguments) for c in found.calls] == [
        ("read_file", {"path": "a.py"})
    ]
    assert found.rest.strip() == "Let me look."


def test_a_result_goes_as_the_users_message() -> None:
    result = {"role": "tool", "tool_call_id": "c1", "content": "print(1)\n"}
    assert as_text(result) == {
        "role": "user",
        "content": "<tool_response>\nprint(1)\n\n</tool_response>",
    }


def test_other_messages_and_broken_arguments_pass() -> None:
    plain = {"role": "user", "content": "hi"}
    assert as_text(plain) is plain
    broken = {**CALLED, "tool_calls": [{"function": {"name": "read_file", "arguments": "{oops"}}]}
    assert '"arguments": "{oops"' in as_text(broken)["content"]


def test_each_message_is_made_once() -> None:
    history = TextCallHistory()
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, CALLED]
    one = history.messages(messages, [READ])
    two = history.messages(messages, [READ])
    assert all(a is b for a, b in zip(one, two, strict=True))


def test_without_tools_the_system_message_stays_and_calls_go_as_text() -> None:
    history = TextCallHistory()
    system = {"role": "system", "content": "You are mm."}
    result = {"role": "tool", "tool_call_id": "c1", "content": "x"}
    sent = history.messages([system, CALLED, result], [])
    assert sent[0] is system
    assert "tool_calls" not in sent[1] and sent[1]["content"].startswith(
        "Let me look.\n<tool_call>"
    )
    assert sent[2]["role"] == "user"
