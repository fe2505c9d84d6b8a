"""A per-user sliding-window rate limit for messages sent from browsers."""

from __future__ import annotations

import time
from collections import defaultdict, deque

_windows: dict[int, deque[float]] = defaultdict(deque)


def allow(user_id: int, *, per_minute: int, now: float | None = None) -> bool:
    """Record an attempt; False once the user has sent ``per_minute`` in the last minute."""
    now = time.monotonic() if now is None else now
    window = _windows[user_id]
    while window and window[0] <= now - 60:
        window.popleft()
    if len(window) >= per_minute:
        return False
    window.append(now)
    return True


def reset() -> None:
    _windows.clear()
