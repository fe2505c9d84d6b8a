"""Relaying a tool's progress: live frames at most a few times a second, the database once a
second, and the latest report always delivered (a trailing edge), never a stale one last."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any

Report = tuple[float | None, str]


class Throttle:
    """Calls ``send(report)`` at most once per ``interval_s``; the last report always goes out."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        interval_s: float,
        send: Callable[[Report], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.loop = loop
        self.interval_s = interval_s
        self.send = send
        self.clock = clock
        self.last_sent = -interval_s
        self.pending: Report | None = None
        self.timer: asyncio.TimerHandle | None = None

    def __call__(self, report: Report) -> None:
        self.pending = report
        wait = self.last_sent + self.interval_s - self.clock()
        if wait <= 0:
            self._flush()
        elif self.timer is None:
            self.timer = self.loop.call_later(wait, self._flush)

    def _flush(self) -> None:
        self.timer = None
        if self.pending is not None:
            report, self.pending = self.pending, None
            self.last_sent = self.clock()
            self.send(report)

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


class ProgressRelay:
    """Fed from any thread by a tool's ``report_progress``; publishes and persists on the loop."""

    LIVE_INTERVAL_S = 0.25
    WRITE_INTERVAL_S = 1.0

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        publish: Callable[[Report], Coroutine[Any, Any, None]],
        save: Callable[[Report], Coroutine[Any, Any, None]],
        spawn: Callable[[Coroutine[Any, Any, None]], Any],
    ) -> None:
        self.loop = loop
        self.closed = False
        self.live = Throttle(loop, self.LIVE_INTERVAL_S, lambda r: spawn(publish(r)))
        self.write = Throttle(loop, self.WRITE_INTERVAL_S, lambda r: spawn(save(r)))

    def report(self, fraction: float | None, text: str) -> None:
        """Thread-safe: hops onto the loop before touching anything."""
        self.loop.call_soon_threadsafe(self._on_loop, (fraction, text))

    def _on_loop(self, report: Report) -> None:
        if self.closed:
            return  # arrived after the result: never show progress on a finished call
        self.live(report)
        self.write(report)

    def close(self) -> None:
        """The tool has finished: its result supersedes any progress not yet sent."""
        self.closed = True
        self.live.cancel()
        self.write.cancel()
