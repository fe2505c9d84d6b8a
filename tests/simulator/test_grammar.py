"""The stream grammar of section 2, seen through the SDK and as raw bytes."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import anthropic
import httpx2

from chat.simulator import Simulator
from chat.simulator.sse import encode_event

from .helpers import TOOLS, parse_sse, request

HEADERS = {"authorization": "Bearer k", "anthropic-version": "2026-10-21"}
THINKING = {"type": "enabled", "budget_tokens": 1024}


async def raw_stream(sim: Simulator, body: dict[str, Any]) -> tuple[int, list[bytes]]:
    answer = await sim.respond("POST", "/v1/messages", HEADERS, json.dumps(body).encode())
    assert not isinstance(answer.body, bytes)
    return answer.status, [chunk async for chunk in answer.body]


def grammar(names: list[str]) -> str:
    """Event names as letters, to match the grammar with a regular expression."""
    letters = {
        "message_start": "S",
        "content_block_start": "B",
        "content_block_delta": "d",
        "content_block_stop": "E",
        "message_delta": "D",
        "message_stop": "Z",
        "ping": "p",
    }
    return "".join(letters[name] for name in names)


def test_it_encodes_one_event() -> None:
    assert encode_event("ping", {"type": "ping"}) == b'event: ping\ndata: {"type":"ping"}\n\n'


async def test_it_streams_events_in_order_through_the_sdk(client: anthropic.AsyncAnthropic) -> None:
    body = request("run the demo tool for 5 seconds", tools=TOOLS, thinking=THINKING)
    async with client.messages.stream(**body) as stream:
        names = [event.type async for event in stream]
    raw = [n for n in names if n not in ("text", "thinking", "signature", "input_json")]
    # message_start, three blocks (thinking, text, tool_use), message_delta, message_stop; the SDK
    # swallows the ping.
    assert re.fullmatch(r"S(Bd+E){3}DZ", grammar(raw))


async def test_it_follows_the_grammar_on_the_wire(sim: Simulator) -> None:
    body = request("run the demo tool twice for 3 seconds", tools=TOOLS, thinking=THINKING)
    status, chunks = await raw_stream(sim, {**body, "stream": True})
    events = parse_sse(b"".join(chunks))
    assert status == 200
    assert all(data["type"] == name for name, data in events)
    assert re.fullmatch(r"SBp(d+E)(Bd+E){3}DZ", grammar([name for name, _ in events]))


async def test_it_sends_one_ping_right_after_the_first_block_start(sim: Simulator) -> None:
    _, chunks = await raw_stream(sim, {**request("hello", tools=TOOLS), "stream": True})
    names = [name for name, _ in parse_sse(b"".join(chunks))]
    assert names.count("ping") == 1
    assert names.index("ping") == names.index("content_block_start") + 1


async def test_it_opens_every_tool_input_with_an_empty_fragment(sim: Simulator) -> None:
    body = {**request("run the demo tool twice for 3 seconds", tools=TOOLS), "stream": True}
    _, chunks = await raw_stream(sim, body)
    events = parse_sse(b"".join(chunks))
    fragments: dict[int, list[str]] = {}
    for name, data in events:
        if name == "content_block_delta" and data["delta"]["type"] == "input_json_delta":
            fragments.setdefault(data["index"], []).append(data["delta"]["partial_json"])
    assert len(fragments) == 2
    for pieces in fragments.values():
        assert pieces[0] == ""
        assert len(pieces) > 2
        assert json.loads("".join(pieces)) == {"seconds": 3}


async def test_it_signs_thinking_just_before_the_block_stops(sim: Simulator) -> None:
    body = {**request("hello", thinking=THINKING), "stream": True}
    _, chunks = await raw_stream(sim, body)
    events = parse_sse(b"".join(chunks))
    stop = next(i for i, (name, _) in enumerate(events) if name == "content_block_stop")
    assert events[stop - 1][1]["delta"]["type"] == "signature_delta"
    kinds = [data["delta"]["type"] for name, data in events[:stop] if name == "content_block_delta"]
    assert kinds.count("signature_delta") == 1
    assert set(kinds[:-1]) == {"thinking_delta"}


async def test_it_reports_cumulative_usage(sim: Simulator) -> None:
    _, chunks = await raw_stream(sim, {**request("run the demo tool", tools=TOOLS), "stream": True})
    events = parse_sse(b"".join(chunks))
    start = events[0][1]["message"]["usage"]
    pieces = [
        data
        for name, data in events
        if name == "content_block_delta" and data["delta"].get("partial_json") != ""
    ]
    final = next(data for name, data in events if name == "message_delta")
    assert set(start) == {
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "output_tokens",
        "service_tier",
    }
    assert final["usage"]["output_tokens"] == len(pieces)
    assert final["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}


async def test_it_sends_each_event_as_its_own_chunk(sim: Simulator) -> None:
    _, chunks = await raw_stream(sim, {**request("hello"), "stream": True})
    assert len(chunks) == len(parse_sse(b"".join(chunks))) > 5


async def test_it_paces_tokens() -> None:
    sim = Simulator(tokens_per_second=500)
    started = time.monotonic()
    _, chunks = await raw_stream(sim, {**request("hello"), "stream": True})
    tokens = parse_sse(chunks[-2])[0][1]["usage"]["output_tokens"]
    assert time.monotonic() - started >= 0.9 * tokens / 500


async def test_it_answers_without_streaming(client: anthropic.AsyncAnthropic) -> None:
    message = await client.messages.create(**request("what is 17*23", tools=TOOLS))
    assert [block.type for block in message.content] == ["text", "tool_use"]
    assert message.content[1].input == {"expression": "17*23"}  # type: ignore[union-attr]
    assert message.stop_reason == "tool_use"
    assert message.usage.output_tokens > 0


async def test_it_counts_tokens(client: anthropic.AsyncAnthropic) -> None:
    body = request("hello " * 100)
    del body["max_tokens"]
    counted = await client.messages.count_tokens(**body)
    assert 150 <= counted.input_tokens <= 200


async def test_it_needs_an_api_key(sim: Simulator) -> None:
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(sim.handle)) as http:
        response = await http.post("https://x/v1/messages", json=request("hi"))
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"
    assert response.headers["request-id"] == response.json()["request_id"]


async def test_it_accepts_x_api_key_and_the_old_version(sim: Simulator) -> None:
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(sim.handle)) as http:
        response = await http.post("https://x/v1/messages", json=request("hi"), headers=headers)
    assert response.status_code == 200
    assert response.json()["type"] == "message"
    assert response.headers["request-id"].startswith("req_")


async def test_it_refuses_a_body_that_is_not_json(sim: Simulator) -> None:
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(sim.handle)) as http:
        response = await http.post("https://x/v1/messages", content=b"{nope", headers=HEADERS)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert sim.stats.snapshot()["rejected_invalid"] == 1


async def test_it_counts_requests_by_status(
    client: anthropic.AsyncAnthropic, sim: Simulator
) -> None:
    await client.messages.create(**request("hi"))
    assert sim.stats.snapshot() == {
        "requests": 1,
        "rejected_invalid": 0,
        "faults_injected": 0,
        "by_status": {200: 1},
    }
