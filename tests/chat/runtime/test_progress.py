"""Progress relay: throttled, the latest report always delivered, nothing after the result."""

from __future__ import annotations

import asyncio
from typing import Any

from chat.runtime.progress import ProgressRelay, Throttle


class FakeTimer:
    def __init__(self, callback: Any) -> None:
        self.callback = callback
        self.was_cancelled = False

    def fire(self) -> None:
        self.callback()

    def cancel(self) -> None:
        self.was_cancelled = True


class FakeLoop:
    """Records call_later; tests fire the timers by hand with a fake clock."""

    def __init__(self) -> None:
        self.timers: list[tuple[float, FakeTimer]] = []

    def call_later(self, delay: float, callback: Any) -> FakeTimer:
        timer = FakeTimer(callback)
        self.timers.append((delay, timer))
        return timer


def test_it_sends_at_once_then_at_most_once_per_interval_with_the_latest_report() -> None:
    now = [0.0]
    loop, sent = FakeLoop(), []
    throttle = Throttle(loop, 0.25, sent.append, clock=lambda: now[0])  # type: ignore[arg-type]
    throttle((0.1, "a"))
    throttle((0.2, "b"))
    throttle((0.3, "c"))
    assert sent == [(0.1, "a")]
    [(delay, handle)] = loop.timers
    assert delay == 0.25
    now[0] = 0.25
    handle.fire()
    assert sent == [(0.1, "a"), (0.3, "c")]  # b was superseded, c was not lost


def test_it_cancels_a_pending_report() -> None:
    loop, sent = FakeLoop(), []
    throttle = Throttle(loop, 1.0, sent.append, clock=lambda: 0.5)  # type: ignore[arg-type]
    throttle.last_sent = 0.0
    throttle((0.5, "half"))
    throttle.cancel()
    assert sent == [] and loop.timers[0][1].was_cancelled


async def test_it_relays_reports_from_a_thread_and_nothing_after_close() -> None:
    published: list[Any] = []
    saved: list[Any] = []

    async def publish(report: Any) -> None:
        published.append(report)

    async def save(report: Any) -> None:
        saved.append(report)

    relay = ProgressRelay(asyncio.get_running_loop(), publish, save, asyncio.ensure_future)
    await asyncio.to_thread(relay.report, 0.5, "half way")
    await asyncio.sleep(0.01)
    assert published == [(0.5, "half way")] and saved == [(0.5, "half way")]
    relay.close()
    relay.report(1.0, "late")
    await asyncio.sleep(0.01)
    assert published == [(0.5, "half way")]
