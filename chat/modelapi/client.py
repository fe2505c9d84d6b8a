"""The one place that makes the model client: the real API with a key, else the simulator."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

import anthropic
from django.conf import settings

if TYPE_CHECKING:
    from chat.simulator import Simulator

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anthropic.AsyncAnthropic] = (
    weakref.WeakKeyDictionary()
)
_once_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anthropic.AsyncAnthropic] = (
    weakref.WeakKeyDictionary()
)


def uses_simulator() -> bool:
    return not settings.ANTHROPIC_API_KEY


def _make() -> anthropic.AsyncAnthropic:
    retries = settings.ANTHROPIC_MAX_RETRIES
    if settings.ANTHROPIC_API_KEY:
        # base_url=None lets the SDK read ANTHROPIC_BASE_URL, as it documents.
        return anthropic.AsyncAnthropic(
            api_key=settings.ANTHROPIC_API_KEY,
            base_url=settings.ANTHROPIC_BASE_URL or None,
            max_retries=retries,
        )
    from chat.simulator import make_client

    return make_client(simulator(), max_retries=retries)


_simulator: Simulator | None = None


def simulator() -> Simulator:
    """The process's simulator (its stats are what the load test reads)."""
    global _simulator
    if _simulator is None:
        from chat.simulator import Simulator

        _simulator = Simulator(
            tokens_per_second=settings.SIMULATOR_TOKENS_PER_SECOND, seed=settings.SIMULATOR_SEED
        )
    return _simulator


def _for_loop(
    cache: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anthropic.AsyncAnthropic],
    make: Callable[[], anthropic.AsyncAnthropic],
) -> anthropic.AsyncAnthropic:
    loop = asyncio.get_running_loop()
    client = cache.get(loop)
    if client is None:
        client = cache[loop] = make()
    return client


def get_client() -> anthropic.AsyncAnthropic:
    """One client per event loop: connection pools must not cross loops."""
    return _for_loop(_clients, _make)


def get_client_without_retries() -> anthropic.AsyncAnthropic:
    """The loop's client, made to try each request once (callers retry visibly), sharing its
    connection pool; made once per loop rather than per request (``with_options`` copies)."""
    return _for_loop(_once_clients, lambda: get_client().with_options(max_retries=0))


def reset() -> None:
    """Forget cached clients (tests that change settings)."""
    _clients.clear()
    _once_clients.clear()
