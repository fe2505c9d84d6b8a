"""Cache breakpoints, the 1-hour option and the keep-alive request built from a thread."""

from __future__ import annotations

from typing import Any

from chat.modelapi import history
from chat.modelapi.history import PendingCall, RequestOptions, StoredMessage
from chat.simulator.cache import PromptCache
from chat.simulator.validator import validate_request

TOOL = {"name": "tool_buffer_demo", "description": "demo", "input_schema": {"type": "object"}}
OPTIONS = RequestOptions(
    model="claude-sonnet-4-5", max_tokens=1024, system="Be thorough. " * 400, tools=[TOOL]
)
CALL = {"type": "tool_use", "id": "toolu_1", "name": "tool_buffer_demo", "input": {}}
PENDING = [PendingCall("toolu_1", "tool_buffer_demo")]


def thread_with_running_tool() -> list[StoredMessage]:
    return [
        StoredMessage(1, "user", "prompt", [{"type": "text", "text": "run the demo"}]),
        StoredMessage(2, "assistant", "reply", [{"type": "text", "text": "Starting."}, CALL]),
    ]


def flushed(thread: list[StoredMessage]) -> list[StoredMessage]:
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "done"}
    return [
        *thread,
        StoredMessage(3, "assistant", "tool_calls", [CALL]),
        StoredMessage(4, "user", "tool_results", [result]),
    ]


def marked(request: dict[str, Any]) -> list[Any]:
    blocks = [*request.get("tools", []), *request.get("system", [])]
    blocks += [b for turn in request["messages"] for b in turn["content"]]
    return [b for b in blocks if "cache_control" in b]


def test_no_keepalive_is_built_when_nothing_pends() -> None:
    assert history.build_keepalive_request(thread_with_running_tool(), OPTIONS, []) is None


def test_the_keepalive_is_the_turns_request_with_max_tokens_zero() -> None:
    request = history.build_keepalive_request(thread_with_running_tool(), OPTIONS, PENDING)
    assert request is not None
    validate_request(request)
    assert request["max_tokens"] == 0 and "stream" not in request
    # The mark sits on the stored reply, not on the placeholder a later request replaces.
    assert marked(request)[-1] == {
        "type": "text",
        "text": "Starting.",
        "cache_control": {"type": "ephemeral"},
    }


def test_no_keepalive_with_thinking_on() -> None:
    options = RequestOptions(**{**OPTIONS.__dict__, "max_tokens": 4096, "thinking_budget": 2048})
    assert history.build_keepalive_request(thread_with_running_tool(), options, PENDING) is None


def test_keepalives_keep_the_prefix_the_next_request_reads() -> None:
    clock = [0.0]
    cache = PromptCache(lambda: clock[0])
    thread = thread_with_running_tool()
    first = history.build_request(thread[:1], OPTIONS)
    cache.usage(first)
    for minute in (4.5, 9.0, 13.5):  # the tool runs 15 minutes
        clock[0] = minute * 60
        keepalive = history.build_keepalive_request(thread, OPTIONS, PENDING)
        assert keepalive is not None
        assert cache.usage(keepalive).cache_read_input_tokens > 0
    clock[0] = 15 * 60
    after = cache.usage(history.build_request(flushed(thread), OPTIONS))
    assert after.cache_read_input_tokens > 10 * after.cache_creation_input_tokens


def test_without_keepalives_the_prefix_is_written_again() -> None:
    clock = [0.0]
    cache = PromptCache(lambda: clock[0])
    thread = thread_with_running_tool()
    cache.usage(history.build_request(thread[:1], OPTIONS))
    clock[0] = 15 * 60
    after = cache.usage(history.build_request(flushed(thread), OPTIONS))
    assert after.cache_read_input_tokens == 0 and after.cache_creation_input_tokens > 1024


def test_the_one_hour_option_marks_every_breakpoint_and_stays_valid() -> None:
    options = RequestOptions(**{**OPTIONS.__dict__, "cache_ttl": "1h"})
    request = history.build_request(flushed(thread_with_running_tool()), options)
    validate_request(request)
    assert [b["cache_control"] for b in marked(request)] == [{"type": "ephemeral", "ttl": "1h"}] * 3
