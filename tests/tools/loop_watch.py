"""Watching the event loop: a coroutine that ticks every 50 ms notes how late each tick was."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field


@dataclass
class LoopWatch:
    ticks: list[float] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    elapsed: float = 0.0

    @property
    def longest_gap(self) -> float:
        return max(b - a for a, b in itertools.pairwise(self.ticks))


@asynccontextmanager
async def watching_the_loop() -> AsyncIterator[LoopWatch]:
    watch = LoopWatch()

    async def heartbeat() -> None:
        while True:
            watch.ticks.append(time.monotonic())
            await asyncio.sleep(0.05)

    beating = asyncio.create_task(heartbeat())
    try:
        yield watch
    finally:
        watch.elapsed = time.monotonic() - watch.started
        beating.cancel()
        await asyncio.gather(beating, return_exceptions=True)
