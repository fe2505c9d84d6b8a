"""The simulator against a real capture (the SDK's own fixture of a streamed reply)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import anthropic
import httpx2

from .helpers import MODEL, request

CAPTURE = (Path(__file__).parent / "fixtures" / "capture_text_tool.sse").read_bytes()
WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"location": {"type": "string"}}},
}
HELPER_EVENTS = ("text", "input_json", "thinking", "signature")  # the SDK's own, per delta
TIME = {
    "name": "current_time",
    "description": "The time in a timezone.",
    "input_schema": {"type": "object", "properties": {"timezone": {"type": "string"}}},
}


async def replay(_: httpx2.Request) -> httpx2.Response:
    async def body() -> Any:
        for frame in CAPTURE.split(b"\n\n"):
            if frame.strip():
                yield frame + b"\n\n"

    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body())


async def run(client: anthropic.AsyncAnthropic, body: dict[str, Any]) -> tuple[list[str], Any]:
    async with client.messages.stream(**body) as stream:
        types = [event.type async for event in stream if event.type not in HELPER_EVENTS]
        final = await stream.get_final_message()
    # Runs of deltas (their number depends on the text) count as one.
    return [name for name, _ in itertools.groupby(types)], final


def shape(value: Any) -> Any:
    """The structure of a value: keys and types, not contents."""
    if isinstance(value, dict):
        return {key: "object" if key == "input" else shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value]
    return type(value).__name__


async def test_it_replays_the_capture_through_the_sdk() -> None:
    transport = httpx2.MockTransport(replay)
    async with anthropic.AsyncAnthropic(
        api_key="k", http_client=httpx2.AsyncClient(transport=transport)
    ) as client:
        _, final = await run(client, request("Weather in Paris?", tools=[WEATHER]))
    assert final.stop_reason == "tool_use"
    assert final.content[1].input == {"location": "Paris"}


async def test_it_streams_like_the_capture(client: anthropic.AsyncAnthropic) -> None:
    transport = httpx2.MockTransport(replay)
    async with anthropic.AsyncAnthropic(
        api_key="k", http_client=httpx2.AsyncClient(transport=transport)
    ) as captured:
        real_types, real = await run(captured, request("Weather in Paris?", tools=[WEATHER]))
    sim_types, simulated = await run(client, request("What time is it in Paris?", tools=[TIME]))
    assert sim_types == real_types
    assert [block.type for block in simulated.content] == ["text", "tool_use"]
    assert simulated.model == MODEL
    assert shape(simulated.model_dump(exclude_unset=True)) == shape(
        real.model_dump(exclude_unset=True)
    )
    assert simulated.content[1].input == {"timezone": "Europe/Paris"}
