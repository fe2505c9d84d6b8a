"""A per-user rate limit on messages sent from browsers, counted in Django's cache.

The count lives in the default cache, so every server process sharing that cache shares it:
with ``REDIS_URL`` set (the several-processes deployment) the cache is Redis; without it the
cache is local memory and the limit holds per process (the single-process default).

The window slides approximately: the previous minute's count, weighted by how much of it still
lies within the last 60 seconds, plus the current minute's count (two keys per user, no log).
Attempts that are refused are not counted, so a user who waits gets through again.
"""

from __future__ import annotations

import contextlib
import time

from asgiref.sync import sync_to_async
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache

WINDOW_S = 60
_generation = 0  # bumped by reset(): tests start from zero without flushing a shared cache


def _key(user_id: int, window: int) -> str:
    return f"ratelimit:{_generation}:{user_id}:{window}"


def allow(user_id: int, *, per_minute: int, now: float | None = None) -> bool:
    """Record an attempt; False once the user has sent ``per_minute`` in about a minute."""
    now = time.time() if now is None else now
    window, into = divmod(now, WINDOW_S)
    current, previous = _key(user_id, int(window)), _key(user_id, int(window) - 1)
    cache = caches["default"]
    cache.add(current, 0, timeout=2 * WINDOW_S + 5)
    try:
        count = cache.incr(current)  # atomic in Redis and in local memory
    except ValueError:  # expired between add and incr
        cache.set(current, 1, timeout=2 * WINDOW_S + 5)
        count = 1
    earlier = int(cache.get(previous, 0))
    if earlier * (1 - into / WINDOW_S) + count > per_minute:
        with contextlib.suppress(ValueError):
            cache.decr(current)
        return False
    return True


async def allow_from_loop(user_id: int, *, per_minute: int) -> bool:
    """``allow`` from async code: on the loop itself when the counts are in this process's
    memory, else in a thread (a shared cache is I/O)."""
    if in_process():
        return allow(user_id, per_minute=per_minute)
    allowed: bool = await sync_to_async(allow, thread_sensitive=False)(
        user_id, per_minute=per_minute
    )
    return allowed


def in_process() -> bool:
    """Whether the counts live in this process's memory: then ``allow`` never waits on I/O and
    may run on the event loop itself, without a hop to a thread."""
    return isinstance(caches["default"], LocMemCache)


def reset() -> None:
    """Forget every count (tests)."""
    global _generation
    _generation += 1
