"""What the simulated model answers: plain-words tool calls, hooks, limits, determinism."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest

from chat.simulator.brain import Reply, decide, tokenize

from .helpers import TOOLS, assistant, request, tool_result, tool_use, user


def calls(reply: Reply) -> list[tuple[str, Any]]:
    return [(b.name, json.loads(b.content)) for b in reply.blocks if b.type == "tool_use"]


def text(reply: Reply) -> str:
    return "".join(b.content for b in reply.blocks if b.type == "text")


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("run the demo tool for 5 seconds", [("tool_buffer_demo", {"seconds": 5})]),
        ("try the tool_buffer_demo", [("tool_buffer_demo", {"seconds": 10})]),
        ("run the demo tool twice for 3 seconds", [("tool_buffer_demo", {"seconds": 3})] * 2),
        ("What time is it in Tokyo?", [("current_time", {"timezone": "Asia/Tokyo"})]),
        ("what's the time in America/Denver", [("current_time", {"timezone": "America/Denver"})]),
        ("what time is it", [("current_time", {"timezone": "UTC"})]),
        ("calculate 2 * (3 + 4)", [("calculate", {"expression": "2 * (3 + 4)"})]),
        ("what is 17*23?", [("calculate", {"expression": "17*23"})]),
        ('call current_time with {"zone": 42}', [("current_time", {"zone": 42})]),
        ('call no_such_tool with {"a": 1}', [("no_such_tool", {"a": 1})]),
        ("what is the capital of France?", []),
    ],
)
def test_it_calls_tools_asked_for_in_plain_words(said: str, expected: list[Any]) -> None:
    reply = decide(request(said, tools=TOOLS))
    assert calls(reply) == expected
    assert reply.stop_reason == ("tool_use" if expected else "end_turn")


def test_it_announces_the_demo_tool() -> None:
    reply = decide(request("run the demo tool for 5 seconds", tools=TOOLS))
    assert text(reply) == (
        "I'll start the demo tool for 5 seconds in the background; we can keep talking meanwhile."
    )


def test_it_streams_raw_tool_input_verbatim() -> None:
    reply = decide(request("call calculate with raw {oops", tools=TOOLS))
    assert [(b.name, b.content, b.raw) for b in reply.blocks] == [("calculate", "{oops", True)]


def test_it_calls_no_tool_that_is_not_offered() -> None:
    assert calls(decide(request("what time is it in Tokyo", tools=TOOLS[:1]))) == []


def test_it_calls_no_tool_when_tool_choice_is_none() -> None:
    body = request("run the demo tool", tools=TOOLS, tool_choice={"type": "none"})
    assert calls(decide(body)) == []


def test_it_calls_a_forced_tool_without_text() -> None:
    body = request("hello", tools=TOOLS, tool_choice={"type": "tool", "name": "calculate"})
    reply = decide(body)
    assert [b.type for b in reply.blocks] == ["tool_use"]
    assert reply.blocks[0].name == "calculate"


def test_it_calls_one_tool_when_parallel_calls_are_disabled() -> None:
    choice = {"type": "auto", "disable_parallel_tool_use": True}
    body = request("run the demo tool twice", tools=TOOLS, tool_choice=choice)
    assert len(calls(decide(body))) == 1


def test_it_reports_tool_results() -> None:
    messages = [
        user("run the demo tool and what time is it"),
        assistant([tool_use("toolu_a", "tool_buffer_demo"), tool_use("toolu_b")]),
        user(
            [
                tool_result("toolu_a", "slept " * 60),
                tool_result("toolu_b", "no zone", is_error=True),
            ]
        ),
    ]
    reply = decide({**request("x", tools=TOOLS), "messages": messages})
    first, second = text(reply).split("\n\n")
    assert first.startswith("The tool_buffer_demo call finished: slept slept")
    assert len(first) < 260
    assert second == "The tool current_time failed: no zone."
    assert reply.stop_reason == "end_turn"


def test_it_says_which_tool_is_still_running() -> None:
    note = {"type": "text", "text": "[Tandem: tool_buffer_demo is still running]"}
    messages = [user([note, {"type": "text", "text": "is it done yet?"}])]
    reply = decide({**request("x", tools=TOOLS), "messages": messages})
    assert text(reply).startswith("The tool_buffer_demo call is still running.")


def test_it_replies_with_exactly_the_given_text() -> None:
    hostile = '<img src=x onerror="alert(1)"> **bold**\n\n<script>alert(2)</script>  '
    reply = decide(request(f"Reply with exactly: {hostile}", tools=TOOLS))
    assert text(reply) == hostile


def test_it_quotes_the_user_safely() -> None:
    reply = decide(request("tell me about <script>alert(1)</script> please"))
    assert "<" not in text(reply)
    assert "tell me about script alert" in text(reply)


def test_it_writes_a_long_answer_on_request() -> None:
    words = len(text(decide(request("write a long answer about rivers"))).split())
    assert 300 <= words <= 500


def test_it_is_deterministic() -> None:
    body = request("hello there, how are things?", tools=TOOLS)
    assert decide(body) == decide({**body, "stream": True})
    others = {text(decide(body, seed=seed)) for seed in range(10)}
    assert len(others) > 1


def test_it_stops_at_max_tokens() -> None:
    reply = decide({**request("write a long answer"), "max_tokens": 25})
    assert reply.stop_reason == "max_tokens"
    assert reply.output_tokens == 25


def test_it_stops_at_a_stop_sequence() -> None:
    reply = decide(request("Reply with exactly: one STOP two", stop_sequences=["STOP"]))
    assert (text(reply), reply.stop_reason, reply.stop_sequence) == (
        "one ",
        "stop_sequence",
        "STOP",
    )


def test_it_tokenizes_losslessly() -> None:
    sample = "  Hello,   wonderful\nworld!  "
    assert "".join(tokenize(sample)) == sample
    assert all(len(piece.strip()) <= 5 for piece in tokenize(sample))


async def test_the_sdk_refuses_invalid_tool_json_mid_stream(
    client: anthropic.AsyncAnthropic,
) -> None:
    seen: list[str] = []
    with pytest.raises(ValueError, match="Unable to parse tool parameter JSON"):
        async with client.messages.stream(
            **request("call calculate with raw oops", tools=TOOLS)
        ) as stream:
            async for event in stream:
                seen.append(event.type)
    assert "content_block_stop" not in seen[2:]  # raised on a delta, before the block stops


def test_it_gives_every_tool_call_a_new_id_even_for_identical_requests() -> None:
    body = request("run the demo tool for 5 seconds", tools=TOOLS)
    replies = (decide(body), decide(body))
    ids = [b.tool_id for r in replies for b in r.blocks if b.type == "tool_use"]
    assert len(set(ids)) == 2
    assert text(replies[0]) == text(replies[1])  # the content stays deterministic


def test_it_answers_a_prompt_stored_just_before_a_flushed_tool_pair() -> None:
    body = request("run the demo tool for 1 second", tools=TOOLS)
    body["messages"] += [
        assistant([{"type": "text", "text": "Started."}]),
        user("what is 17*23?"),
        assistant([tool_use("toolu_1", "tool_buffer_demo", seconds=1)]),
        user([tool_result("toolu_1", "demo done")]),
    ]
    reply = decide(body)
    assert "demo done" in text(reply)
    assert calls(reply) == [("calculate", {"expression": "17*23"})]
