"""What a running tool can see of its call: its ids, a progress reporter and a cancel flag."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
from collections.abc import Callable

from tools.errors import ToolCancelled

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[float | None, str], None]


class ToolContext:
    """Handed to a tool whose first parameter is annotated `ToolContext`.

    Everything here is safe to call from the event loop and from worker threads. Cancellation is
    cooperative: a sync tool polls `cancelled` or calls `check_cancelled()`; an async tool waits
    with `await ctx.sleep(...)`, which wakes as soon as `cancel()` is called from any thread.
    """

    def __init__(
        self,
        tool_use_id: str,
        conversation_id: int | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> None:
        self.tool_use_id = tool_use_id
        self.conversation_id = conversation_id
        self._on_progress = on_progress
        self._cancel = threading.Event()
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def __repr__(self) -> str:
        return f"<ToolContext {self.tool_use_id} cancelled={self.cancelled}>"

    def report_progress(self, fraction: float | None, text: str = "") -> None:
        """Report how far the tool has come (0..1, None if unknown). Never raises."""
        if fraction is not None:
            fraction = 0.0 if math.isnan(fraction) else min(1.0, max(0.0, float(fraction)))
        if self._on_progress is None:
            return
        try:
            self._on_progress(fraction, text)
        except Exception:
            # Progress is best effort: a broken listener must not fail the tool.
            logger.exception("Progress callback failed for tool call %s", self.tool_use_id)

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        """Ask the tool to stop, from any thread. Wakes every `sleep()` and `wait_cancelled()`."""
        self._cancel.set()
        with self._lock:
            waiters, self._waiters = self._waiters, []
        for loop, waiter in waiters:
            with contextlib.suppress(RuntimeError):  # a closed loop has nobody waiting any more
                loop.call_soon_threadsafe(_resolve, waiter)

    def check_cancelled(self) -> None:
        """Raise `ToolCancelled` if the caller asked the tool to stop."""
        if self._cancel.is_set():
            raise ToolCancelled(f"Tool call {self.tool_use_id} was cancelled.")

    async def sleep(self, seconds: float) -> None:
        """Like `asyncio.sleep`, but raise `ToolCancelled` as soon as the call is cancelled."""
        self.check_cancelled()
        waiter = self._add_waiter()
        try:
            await asyncio.wait([waiter], timeout=max(0.0, seconds))
        finally:
            self._discard_waiter(waiter)
        self.check_cancelled()

    async def wait_cancelled(self) -> None:
        """Return once `cancel()` has been called (used by the executor to stop waiting)."""
        if self.cancelled:
            return
        waiter = self._add_waiter()
        try:
            await waiter
        finally:
            self._discard_waiter(waiter)

    def _add_waiter(self) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        with self._lock:
            self._waiters.append((loop, waiter))
        if self._cancel.is_set():  # cancel() ran between our check and the registration
            _resolve(waiter)
        return waiter

    def _discard_waiter(self, waiter: asyncio.Future[None]) -> None:
        with self._lock:
            self._waiters = [(lp, w) for lp, w in self._waiters if w is not waiter]
        waiter.cancel()


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
