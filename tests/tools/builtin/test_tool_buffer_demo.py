import asyncio
import time

from tools.context import ToolContext
from tools.execution import execute
from tools.registry import registry


def demo():
    spec = registry.get("tool_buffer_demo")
    assert spec is not None
    return spec


def test_it_publishes_its_schema():
    assert demo().safe_to_repeat
    assert demo().timeout_s == 3660
    assert demo().anthropic_schema()["input_schema"] == {
        "type": "object",
        "properties": {
            "seconds": {
                "type": "integer",
                "minimum": 0,
                "maximum": 3600,
                "default": 10,
                "description": "How long the demo runs, in seconds.",
            },
            "sample_data": {
                "anyOf": [{"type": "string", "maxLength": 2000}, {"type": "null"}],
                "default": None,
                "description": "Optional text to echo back when the demo finishes.",
            },
        },
        "additionalProperties": False,
    }


async def test_it_reports_progress_each_second_then_succeeds():
    seen = []
    ctx = ToolContext("toolu_1", on_progress=lambda fraction, text: seen.append((fraction, text)))
    started = time.monotonic()
    outcome = await execute(demo(), {"seconds": 1, "sample_data": "ping"}, ctx, timeout_s=5)
    assert 1 <= time.monotonic() - started < 1.5
    assert seen == [(0.0, "0 of 1 s"), (1.0, "1 of 1 s")]
    assert outcome.status == "succeeded"
    assert outcome.content == (
        "tool_buffer_demo finished after 1 s. The test was successful. Sample data: ping"
    )


async def test_it_finishes_at_once_for_zero_seconds():
    outcome = await execute(demo(), {"seconds": 0}, ToolContext("toolu_1"), timeout_s=5)
    assert outcome.content == "tool_buffer_demo finished after 0 s. The test was successful."


async def test_it_stops_promptly_when_cancelled():
    ctx = ToolContext("toolu_1")
    asyncio.get_running_loop().call_later(0.2, ctx.cancel)
    started = time.monotonic()
    outcome = await execute(demo(), {"seconds": 60}, ctx, timeout_s=5)
    assert outcome.status == "cancelled"
    assert time.monotonic() - started < 0.5


async def test_it_refuses_more_than_an_hour():
    outcome = await execute(demo(), {"seconds": 3601}, ToolContext("toolu_1"), timeout_s=5)
    assert outcome.content == (
        "Invalid input for tool tool_buffer_demo: seconds: Input should be less than or equal "
        "to 3600 (got integer 3601)"
    )
