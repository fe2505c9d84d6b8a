from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

import pytest

from tests.tools.loop_watch import watching_the_loop
from tools.context import ToolContext
from tools.errors import ToolError
from tools.execution import ToolOutcome, execute, get_executor, max_threads
from tools.registry import spec_from_function

stopped = threading.Event()


async def echo(ctx: ToolContext, text: str) -> str:
    """Echo."""
    return text


def add(a: int, b: int) -> int:
    """Add, in a worker thread."""
    return a + b


def returns(value: str) -> Any:
    """Return a value of some type."""
    return {"dict": {"é": [1, None]}, "none": None, "float": 1.5, "set": {1}, "nan": float("nan")}[
        value
    ]


async def refuses() -> str:
    """Fail cleanly."""
    raise ToolError("No such city.")


def crashes() -> str:
    """Fail with a bug."""
    raise KeyError("secret internals")


async def slow_async(ctx: ToolContext) -> str:
    """Sleep without looking at the context."""
    await asyncio.sleep(30)
    return "late"


def slow_sync(ctx: ToolContext) -> str:
    """Work in a thread until told to stop."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not ctx.cancelled:
        time.sleep(0.005)
    stopped.set()
    return "stopped" if ctx.cancelled else "finished"


async def cooperative(ctx: ToolContext) -> str:
    """Sleep through the context."""
    await ctx.sleep(30)
    return "late"


def reports(ctx: ToolContext) -> str:
    """Report progress from a worker thread."""
    ctx.report_progress(0.5, "half")
    return threading.current_thread().name


def naps(seconds: float) -> str:
    """Block a worker thread."""
    time.sleep(seconds)
    return "rested"


def run(func: Any, raw: object, ctx: ToolContext | None = None, timeout_s: float = 5):
    return execute(
        spec_from_function(func), raw, ctx or ToolContext("toolu_1"), timeout_s=timeout_s
    )


async def test_it_runs_an_async_tool():
    assert await run(echo, {"text": "hi"}) == ToolOutcome("succeeded", "hi", is_error=False)


async def test_it_runs_a_sync_tool_and_serialises_its_result():
    assert await run(add, {"a": 2, "b": 3}) == ToolOutcome("succeeded", "5", is_error=False)


@pytest.mark.parametrize(
    ("value", "content"),
    [("dict", '{"é": [1, null]}'), ("none", "null"), ("float", "1.5")],
)
async def test_it_turns_results_into_json_text(value, content):
    outcome = await run(returns, {"value": value})
    assert (outcome.status, outcome.content) == ("succeeded", content)


@pytest.mark.parametrize(("value", "type_name"), [("set", "set"), ("nan", "float")])
async def test_it_fails_on_a_result_that_is_not_json(value, type_name):
    assert await run(returns, {"value": value}) == ToolOutcome(
        "failed",
        f"Tool returns returned a value that is not JSON-serialisable (type {type_name}).",
        is_error=True,
    )


async def test_it_fails_on_invalid_input_without_running_the_tool():
    outcome = await run(add, {"a": 1})
    assert outcome == ToolOutcome("failed", "Invalid input for tool add: b: Field required", True)


async def test_it_returns_a_tool_error_as_is():
    assert await run(refuses, {}) == ToolOutcome("failed", "No such city.", is_error=True)


async def test_it_hides_an_unexpected_exception_but_logs_it(caplog):
    with caplog.at_level(logging.ERROR, logger="tools.execution"):
        outcome = await run(crashes, {})
    assert outcome == ToolOutcome(
        "failed", "Tool crashes failed with an unexpected error (KeyError).", is_error=True
    )
    [record] = caplog.records
    assert record.exc_info is not None
    assert "secret internals" in caplog.text


async def test_it_times_out_an_async_tool():
    started = time.monotonic()
    ctx = ToolContext("toolu_1")
    outcome = await run(slow_async, {}, ctx, timeout_s=0.1)
    assert outcome == ToolOutcome(
        "timed_out", "Tool slow_async timed out after 0.1 s and was stopped.", is_error=True
    )
    assert ctx.cancelled
    assert time.monotonic() - started < 1


async def test_it_times_out_a_sync_tool_and_tells_it_to_stop():
    stopped.clear()
    outcome = await run(slow_sync, {}, timeout_s=0.1)
    assert outcome.status == "timed_out"
    assert await asyncio.to_thread(stopped.wait, 2)


async def test_it_stops_when_the_caller_cancels_through_the_context():
    ctx = ToolContext("toolu_1")
    asyncio.get_running_loop().call_later(0.05, ctx.cancel)
    outcome = await run(slow_async, {}, ctx)
    assert outcome == ToolOutcome(
        "cancelled", "Tool slow_async was cancelled before it finished.", is_error=True
    )


async def test_it_stops_a_sync_tool_cancelled_from_another_thread():
    stopped.clear()
    ctx = ToolContext("toolu_1")
    threading.Timer(0.05, ctx.cancel).start()
    assert (await run(slow_sync, {}, ctx)).status == "cancelled"
    assert await asyncio.to_thread(stopped.wait, 2)


async def test_it_reports_a_cooperative_tool_as_cancelled():
    ctx = ToolContext("toolu_1")
    ctx.cancel()
    assert (await run(cooperative, {}, ctx)).status == "cancelled"


async def test_it_reraises_when_its_own_task_is_cancelled():
    ctx = ToolContext("toolu_1")
    running = asyncio.create_task(run(cooperative, {}, ctx))
    await asyncio.sleep(0.05)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert ctx.cancelled


async def test_it_lets_a_sync_tool_report_progress_from_its_thread():
    seen = []
    ctx = ToolContext(
        "toolu_1", on_progress=lambda f, t: seen.append((f, t, threading.get_ident()))
    )
    outcome = await run(reports, {}, ctx)
    assert outcome.content.startswith("tandem-tool")
    [(fraction, text, thread)] = seen
    assert (fraction, text) == (0.5, "half")
    assert thread != threading.get_ident()


async def test_it_keeps_the_loop_responsive_while_sync_tools_block():
    async with watching_the_loop() as watch:
        outcomes = await asyncio.gather(*(run(naps, {"seconds": 0.5}) for _ in range(20)))
    assert {outcome.content for outcome in outcomes} == {"rested"}
    assert watch.elapsed < 1.5  # in parallel, not 20 x 0.5 s
    assert len(watch.ticks) >= 8
    assert watch.longest_gap < 0.15


def test_it_sizes_the_pool_from_the_task_settings(settings):
    settings.TASKS = {"default": {"BACKEND": "x", "OPTIONS": {"max_threads": 5}}}
    assert max_threads() == 5
    settings.TASKS = {"default": {"BACKEND": "x"}}
    assert max_threads() == 32


def test_it_refuses_a_malformed_pool_size(settings):
    from django.core.exceptions import ImproperlyConfigured

    settings.TASKS = {"default": {"BACKEND": "x", "OPTIONS": {"max_threads": "many"}}}
    with pytest.raises(ImproperlyConfigured, match="must be a positive integer"):
        max_threads()


def test_it_creates_one_pool():
    assert get_executor() is get_executor()
