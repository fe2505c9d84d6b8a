import threading
import time

import pytest

from tools.context import ToolContext
from tools.errors import ToolCancelled


def recorder():
    calls = []
    return calls, lambda fraction, text: calls.append((fraction, text))


def test_it_passes_progress_to_the_callback():
    calls, on_progress = recorder()
    ToolContext("toolu_1", 7, on_progress).report_progress(0.5, "half")
    assert calls == [(0.5, "half")]


def test_it_clamps_progress_between_zero_and_one():
    calls, on_progress = recorder()
    ctx = ToolContext("toolu_1", on_progress=on_progress)
    ctx.report_progress(-3)
    ctx.report_progress(7.5)
    ctx.report_progress(float("nan"))
    ctx.report_progress(None, "unknown")
    assert calls == [(0.0, ""), (1.0, ""), (0.0, ""), (None, "unknown")]


def test_it_ignores_progress_without_a_callback():
    ToolContext("toolu_1").report_progress(0.5)


def test_it_survives_a_broken_progress_callback(caplog):
    def broken(fraction, text):
        raise RuntimeError("listener gone")

    ToolContext("toolu_1", on_progress=broken).report_progress(0.5)
    assert "Progress callback failed for tool call toolu_1" in caplog.text


def test_it_reports_cancellation():
    ctx = ToolContext("toolu_1")
    assert not ctx.cancelled
    ctx.check_cancelled()
    ctx.cancel()
    assert ctx.cancelled
    with pytest.raises(ToolCancelled):
        ctx.check_cancelled()


async def test_it_sleeps_the_full_time_when_not_cancelled():
    started = time.monotonic()
    await ToolContext("toolu_1").sleep(0.05)
    assert time.monotonic() - started >= 0.05


async def test_it_wakes_a_sleeper_when_cancelled_from_another_thread():
    ctx = ToolContext("toolu_1")
    threading.Timer(0.05, ctx.cancel).start()
    started = time.monotonic()
    with pytest.raises(ToolCancelled):
        await ctx.sleep(10)
    assert time.monotonic() - started < 1


async def test_it_refuses_to_sleep_once_cancelled():
    ctx = ToolContext("toolu_1")
    ctx.cancel()
    with pytest.raises(ToolCancelled):
        await ctx.sleep(10)


async def test_it_forgets_sleepers_that_finished():
    ctx = ToolContext("toolu_1")
    await ctx.sleep(0)
    assert ctx._waiters == []
