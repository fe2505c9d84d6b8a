from __future__ import annotations

from chat.modelapi import history
from chat.modelapi.history import PendingCall, RequestOptions, StoredMessage
from chat.simulator.validator import validate_request

OPTIONS = RequestOptions(
    model="claude-sonnet-4-5",
    max_tokens=1024,
    tools=[{"name": "tool_buffer_demo", "description": "demo", "input_schema": {"type": "object"}}],
)


def _user(seq: int, text: str) -> StoredMessage:
    return StoredMessage(seq, "user", "prompt", [{"type": "text", "text": text}])


def test_it_holds_out_a_pending_tool_use_but_keeps_the_text() -> None:
    thread = [
        _user(1, "run the demo"),
        StoredMessage(
            2,
            "assistant",
            "reply",
            [
                {"type": "text", "text": "Starting it."},
                {"type": "tool_use", "id": "toolu_1", "name": "tool_buffer_demo", "input": {}},
            ],
        ),
        _user(3, "meanwhile, hello"),
    ]
    request = history.build_request(thread, OPTIONS, [PendingCall("toolu_1", "tool_buffer_demo")])
    validate_request(request)
    assert request["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Starting it."}],
    }
    note = request["messages"][2]["content"][-1]["text"]
    assert "still running" in note and "toolu_1" in note


def test_it_appends_the_flushed_pair_at_the_end_of_the_thread() -> None:
    thread = [
        _user(1, "run the demo"),
        StoredMessage(
            2,
            "assistant",
            "reply",
            [{"type": "tool_use", "id": "toolu_1", "name": "tool_buffer_demo", "input": {}}],
        ),
        _user(3, "hello"),
        StoredMessage(4, "assistant", "reply", [{"type": "text", "text": "Hi!"}]),
        StoredMessage(
            5,
            "assistant",
            "tool_calls",
            [{"type": "tool_use", "id": "toolu_1", "name": "tool_buffer_demo", "input": {}}],
        ),
        StoredMessage(
            6,
            "user",
            "tool_results",
            [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "done"}],
        ),
    ]
    request = history.build_request(thread, OPTIONS)
    validate_request(request)
    roles = [m["role"] for m in request["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    assert request["messages"][1]["content"][0]["text"].startswith("(Started tool_buffer_demo")
    assert [b["type"] for b in request["messages"][3]["content"]] == ["text", "tool_use"]
    assert request["messages"][4]["content"][0]["tool_use_id"] == "toolu_1"


def test_it_puts_tool_results_before_text_in_a_merged_user_turn() -> None:
    merged = history.merge_turns(
        [
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]},
            {"role": "user", "content": [{"type": "text", "text": "and?"}]},
        ]
    )
    assert [b["type"] for b in merged[0]["content"]] == ["tool_result", "text"]


def test_it_drops_whitespace_text_and_empty_replies() -> None:
    thread = [
        _user(1, "hi"),
        StoredMessage(2, "assistant", "reply", [{"type": "text", "text": "  \n"}]),
        _user(3, "again"),
    ]
    request = history.build_request(thread, OPTIONS)
    validate_request(request)
    assert len(request["messages"]) == 1
    assert [b["text"] for b in request["messages"][0]["content"]] == ["hi", "again"]


def test_it_offers_no_tool_use_when_tools_are_capped() -> None:
    options = RequestOptions(model="m", max_tokens=1024, tools=OPTIONS.tools, allow_tool_use=False)
    request = history.build_request([_user(1, "hi")], options)
    assert request["tool_choice"] == {"type": "none"}


def test_it_sends_definitions_for_tools_in_the_history_even_when_none_are_offered() -> None:
    thread = [
        _user(1, "x"),
        StoredMessage(
            2,
            "assistant",
            "tool_calls",
            [{"type": "tool_use", "id": "toolu_9", "name": "gone_tool", "input": {}}],
        ),
        StoredMessage(
            3,
            "user",
            "tool_results",
            [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "ok"}],
        ),
    ]
    request = history.build_request(thread, RequestOptions(model="m", max_tokens=1024))
    validate_request(request)
    assert [t["name"] for t in request["tools"]] == ["gone_tool"]
    assert request["tool_choice"] == {"type": "none"}


def test_it_keeps_the_note_out_of_the_cached_prefix() -> None:
    request = history.build_request(
        [_user(1, "hi")], OPTIONS, [PendingCall("toolu_1", "tool_buffer_demo")]
    )
    blocks = request["messages"][-1]["content"]
    assert blocks[0].get("cache_control") == {"type": "ephemeral"}
    assert "cache_control" not in blocks[-1]


def test_it_drops_thinking_when_the_last_tool_turn_cannot_start_with_it() -> None:
    thread = [
        _user(1, "x"),
        StoredMessage(
            2,
            "assistant",
            "tool_calls",
            [{"type": "tool_use", "id": "toolu_1", "name": "tool_buffer_demo", "input": {}}],
        ),
        StoredMessage(
            3,
            "user",
            "tool_results",
            [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}],
        ),
    ]
    options = RequestOptions(model="m", max_tokens=4096, tools=OPTIONS.tools, thinking_budget=2048)
    request = history.build_request(thread, options)
    validate_request(request)
    assert "thinking" not in request
