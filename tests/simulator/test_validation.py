"""Every rule of section 4 refuses a violating request with the real API's message."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from .helpers import MODEL, TOOLS, assistant, request, tool_result, tool_use, user

THINKING = {"type": "enabled", "budget_tokens": 1024}
CACHE = {"type": "ephemeral"}
CACHE_1H = {"type": "ephemeral", "ttl": "1h"}
ASK = user("What time is it in Tokyo?")
USE_A = assistant([tool_use("toolu_a")])
PAIR = [ASK, USE_A, user([tool_result("toolu_a")])]
THINKING_FIRST = (
    "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. "
    "When `thinking` is enabled, a final `assistant` message must start with a thinking block "
    "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you "
    "include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. "
    "Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)


def body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 2048, "messages": messages, "tools": TOOLS, **extra}


def without(data: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != key}


def cached_text(text: str = "x", control: dict[str, Any] = CACHE) -> dict[str, Any]:
    return {"type": "text", "text": text, "cache_control": control}


CASES = [
    pytest.param(without(request("hi"), "max_tokens"), "max_tokens: Field required", id="rule1"),
    pytest.param(
        # Two user turns merge into turn 0, so the assistant turn is messages.1, not messages.2.
        body([user("a"), user("b"), USE_A, user("c")]),
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_a. Each `tool_use` block must have a corresponding `tool_result` block in the "
        "next message.",
        id="rule2-merged-index",
    ),
    pytest.param(
        body([ASK, assistant([]), user("more")]),
        "messages.1: all messages must have non-empty content except for the optional final "
        "assistant message",
        id="rule3",
    ),
    pytest.param(
        body([user([{"type": "text", "text": ""}])]),
        "messages: text content blocks must be non-empty",
        id="rule4-empty",
    ),
    pytest.param(
        body([user(" \n ")]),
        "messages: text content blocks must contain non-whitespace text",
        id="rule4-whitespace",
    ),
    pytest.param(
        body([ASK, assistant([tool_use("toolu_a"), tool_use("toolu_b")]), user("done?")]),
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_a, toolu_b. Each `tool_use` block must have a corresponding `tool_result` block "
        "in the next message.",
        id="rule5",
    ),
    pytest.param(
        body([ASK, USE_A, user([tool_result("toolu_a"), tool_result("toolu_x")])]),
        "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_x. "
        "Each `tool_result` block must have a corresponding `tool_use` block in the previous "
        "message.",
        id="rule6",
    ),
    pytest.param(
        body([ASK, USE_A, user([{"type": "text", "text": "here"}, tool_result("toolu_a")])]),
        "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message. "
        "Messages following `tool_use` blocks must begin with a matching number of "
        "`tool_result` blocks.",
        id="rule7",
    ),
    pytest.param(
        body([*PAIR, USE_A, user([tool_result("toolu_a")])]),
        "messages.3.content.0: `tool_use` ids must be unique",
        id="rule8",
    ),
    pytest.param(
        without(body(PAIR), "tools"),
        "Requests which include `tool_use` or `tool_result` blocks must define tools.",
        id="rule9",
    ),
    pytest.param(
        body([ASK, assistant("Sure")]),
        "This model does not support assistant message prefill. "
        "The conversation must end with a user message.",
        id="rule10",
    ),
    pytest.param(
        body([ASK, assistant("Sure ")]),
        "messages: final assistant content cannot end with trailing whitespace",
        id="rule11",
    ),
    pytest.param(
        body([ASK], tools=[{**TOOLS[0], "name": "no spaces"}]),
        "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'",
        id="rule12-name",
    ),
    pytest.param(
        body([ASK], tools=[TOOLS[0], TOOLS[0]]),
        "tools: Tool names must be unique.",
        id="rule12-unique",
    ),
    pytest.param(
        body([ASK], tools=[{**TOOLS[0], "input_schema": {"type": "string"}}]),
        "tools.0.custom.input_schema.type: Input should be 'object'",
        id="rule12-schema",
    ),
    pytest.param(
        body([user([cached_text() for _ in range(5)])]),
        "A maximum of 4 blocks with cache_control may be provided. Found 5.",
        id="rule13-count",
    ),
    pytest.param(
        body([ASK], system=[cached_text("")]),
        "system.0: cache_control cannot be set for empty text blocks",
        id="rule13-empty",
    ),
    pytest.param(
        body([user([cached_text("a"), cached_text("b", CACHE_1H)])]),
        "A cache_control block with ttl='1h' must not come after one with ttl='5m' "
        "(the order is tools, system, messages).",
        id="rule13-ttl-order",
    ),
    pytest.param(
        body([ASK], thinking={"type": "enabled", "budget_tokens": 1000}),
        "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
        id="rule14-budget",
    ),
    pytest.param(
        body([ASK], max_tokens=1024, thinking=THINKING),
        "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
        "documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
        "#max-tokens-and-context-window-size",
        id="rule14-budget-below-max",
    ),
    pytest.param(
        body(
            [
                ASK,
                assistant([{"type": "text", "text": "Checking."}, tool_use("toolu_a")]),
                user([tool_result("toolu_a")]),
            ],
            thinking=THINKING,
        ),
        THINKING_FIRST,
        id="rule14-thinking-first",
    ),
    pytest.param(
        body([ASK], thinking=THINKING, tool_choice={"type": "any"}),
        "Thinking may not be enabled when tool_choice forces tool use.",
        id="rule14-forced-tool",
    ),
    pytest.param(
        body(
            [
                ASK,
                assistant(
                    [
                        {"type": "thinking", "thinking": "edited", "signature": "abc"},
                        tool_use("toolu_a"),
                    ]
                ),
                user([tool_result("toolu_a")]),
            ],
            thinking=THINKING,
        ),
        "messages.1.content.0: Invalid `signature` in `thinking` block",
        id="rule14-signature",
    ),
    pytest.param(
        body([ASK, USE_A, user([tool_result("toolu_a", [tool_use("toolu_b")])])]),
        "messages.2.content.0.content.0: Input tag 'tool_use' found using 'type' does not match "
        "any of the expected tags: 'text', 'image'",
        id="rule15",
    ),
    pytest.param(without(request("hi"), "model"), "model: Field required", id="model"),
    pytest.param(
        {**request("hi"), "messages": {"role": "user"}},
        "messages: Input should be a valid list",
        id="messages-list",
    ),
    pytest.param(
        body([{"role": "system", "content": "hi"}]),
        "messages.0.role: Input should be 'user' or 'assistant'",
        id="role",
    ),
    pytest.param(
        body([user([{"type": "video", "url": "x"}])]),
        "messages.0.content.0: Input tag 'video' found using 'type' does not match any of the "
        "expected tags: 'text', 'image', 'document', 'search_result', 'thinking', "
        "'redacted_thinking', 'tool_use', 'tool_result'",
        id="block-type",
    ),
    pytest.param(
        {**request("hi"), "temprature": 1},
        "temprature: Extra inputs are not permitted",
        id="extra-field",
    ),
]


@pytest.mark.parametrize(("data", "message"), CASES)
async def test_it_refuses_with_the_real_message(
    client: anthropic.AsyncAnthropic, data: dict[str, Any], message: str
) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        await client.post("/v1/messages", cast_to=anthropic.types.Message, body=data)
    assert refused.value.status_code == 400
    assert refused.value.body == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": message},
        "request_id": refused.value.request_id,
    }
