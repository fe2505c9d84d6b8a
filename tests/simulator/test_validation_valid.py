"""Valid requests pass: tool pairs, merged turns, thinking round trips, cache breakpoints."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from .helpers import MODEL, TOOLS, assistant, request, tool_result, tool_use, user

THINKING = {"type": "enabled", "budget_tokens": 1024}


async def reply(client: anthropic.AsyncAnthropic, **body: Any) -> anthropic.types.Message:
    async with client.messages.stream(**{"model": MODEL, "max_tokens": 2048, **body}) as stream:
        return await stream.get_final_message()


async def test_it_accepts_tool_pairs_followed_by_text(client: anthropic.AsyncAnthropic) -> None:
    messages = [
        user("What time is it in Tokyo and in Paris?"),
        assistant(
            [{"type": "text", "text": "Checking."}, tool_use("toolu_a"), tool_use("toolu_b")]
        ),
        user(
            [
                tool_result("toolu_b", "12:00"),
                tool_result("toolu_a", "19:00"),
                {"type": "text", "text": "thanks"},
            ]
        ),
    ]
    message = await reply(client, messages=messages, tools=TOOLS)
    assert message.stop_reason == "end_turn"


async def test_it_merges_consecutive_turns(client: anthropic.AsyncAnthropic) -> None:
    message = await reply(
        client, messages=[user("one"), user("two"), assistant("ok"), user("three")]
    )
    assert message.stop_reason == "end_turn"


async def test_it_accepts_failed_results_with_block_content(
    client: anthropic.AsyncAnthropic,
) -> None:
    content = [{"type": "text", "text": "Unknown timezone"}]
    messages = [
        user("time?"),
        assistant([tool_use("toolu_a")]),
        user([tool_result("toolu_a", content, is_error=True)]),
    ]
    message = await reply(client, messages=messages, tools=TOOLS)
    assert message.content[0].text == "The tool current_time failed: Unknown timezone."  # type: ignore[union-attr]


async def test_it_accepts_its_own_thinking_back(client: anthropic.AsyncAnthropic) -> None:
    first = await reply(
        client, **request("what time is it in Tokyo", tools=TOOLS, thinking=THINKING)
    )
    assert [block.type for block in first.content] == ["thinking", "text", "tool_use"]
    tool_id = first.content[2].id  # type: ignore[union-attr]
    messages = [
        user("what time is it in Tokyo"),
        assistant([block.model_dump(exclude_unset=True) for block in first.content]),
        user([tool_result(tool_id, "09:00")]),
    ]
    second = await reply(client, messages=messages, tools=TOOLS, thinking=THINKING)
    assert second.content[1].text == "The current_time call finished: 09:00."  # type: ignore[union-attr]


async def test_it_accepts_redacted_thinking_first(client: anthropic.AsyncAnthropic) -> None:
    redacted = {"type": "redacted_thinking", "data": "opaque"}
    messages = [
        user("time?"),
        assistant([redacted, tool_use("toolu_a")]),
        user([tool_result("toolu_a")]),
    ]
    message = await reply(client, messages=messages, tools=TOOLS, thinking=THINKING)
    assert message.content[0].type == "thinking"


async def test_it_accepts_four_breakpoints_long_before_short(
    client: anthropic.AsyncAnthropic,
) -> None:
    long, short = {"type": "ephemeral", "ttl": "1h"}, {"type": "ephemeral"}
    tools = [{**TOOLS[0], "cache_control": long}, *TOOLS[1:]]
    system = [{"type": "text", "text": "Be brief.", "cache_control": long}]
    blocks = [{"type": "text", "text": word, "cache_control": short} for word in ("a", "b")]
    message = await reply(client, messages=[user(blocks)], tools=tools, system=system)
    assert message.stop_reason == "end_turn"


async def test_it_reads_the_cache_on_the_second_request(client: anthropic.AsyncAnthropic) -> None:
    system = [
        {"type": "text", "text": "You are helpful. " * 400, "cache_control": {"type": "ephemeral"}}
    ]
    first = await reply(client, system=system, messages=[user("hi")])
    second = await reply(
        client, system=system, messages=[user("hi"), assistant("Hello."), user("again")]
    )
    assert first.usage.cache_creation_input_tokens == second.usage.cache_read_input_tokens > 1024
    assert first.usage.cache_read_input_tokens == second.usage.cache_creation_input_tokens == 0


async def test_it_caches_nothing_below_the_minimum(client: anthropic.AsyncAnthropic) -> None:
    system = [{"type": "text", "text": "Short.", "cache_control": {"type": "ephemeral"}}]
    message = await reply(client, system=system, messages=[user("hi")])
    assert message.usage.cache_creation_input_tokens == 0


async def test_it_counts_tokens_without_max_tokens(client: anthropic.AsyncAnthropic) -> None:
    counted = await client.messages.count_tokens(model=MODEL, messages=[user("hello")])
    assert counted.input_tokens > 0


async def test_it_refuses_max_tokens_when_counting(client: anthropic.AsyncAnthropic) -> None:
    with pytest.raises(
        anthropic.BadRequestError, match="max_tokens: Extra inputs are not permitted"
    ):
        await client.messages.count_tokens(
            model=MODEL, messages=[user("hi")], extra_body={"max_tokens": 5}
        )
