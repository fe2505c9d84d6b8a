"""When to ask the model API again, and how long to wait first: the pure retry policy.

Tandem owns this instead of leaving it to the SDK (which retries invisibly), so the person
waiting sees "Retrying… (attempt 2 of 3)". Only failures before the first stream event are
retried: after that, output exists and is kept, and the person decides (the Retry button).

Retried, like the SDK does: connection errors and timeouts, 408, 409, 429 and every status
>= 500 (529 overloaded included), and an in-stream ``error`` event that arrives before any
other event. The server's ``x-should-retry`` header overrides the status. The wait honours
``retry-after-ms`` and ``retry-after`` (seconds or an HTTP date); otherwise it is a jittered
exponential backoff capped at a few seconds.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Mapping

import anthropic
import httpx2

BASE_DELAY_S = 0.5
MAX_DELAY_S = 4.0
MAX_RETRY_AFTER_S = 60.0  # a server asking for a longer wait gets an error, not a silent minute
RETRYABLE_STATUSES = frozenset({408, 409, 429})
RETRYABLE_STREAM_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error"})


def is_retryable(exc: BaseException) -> bool:
    """Whether asking again may help (before anything was streamed)."""
    if isinstance(exc, anthropic.APIStatusError):
        verdict = exc.response.headers.get("x-should-retry")
        if verdict in ("true", "false"):
            return verdict == "true"
        if exc.status_code == 200:  # an `error` event in a stream that had started
            return exc.type in RETRYABLE_STREAM_ERRORS
        return exc.status_code in RETRYABLE_STATUSES or exc.status_code >= 500
    return isinstance(exc, (anthropic.APIConnectionError, httpx2.TransportError))


def retry_after(headers: Mapping[str, str], *, now: float) -> float | None:
    """The wait the server asked for, in seconds, or None when it asked for nothing usable."""
    try:
        return max(0.0, float(headers["retry-after-ms"]) / 1000)
    except (KeyError, TypeError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - now)


def backoff(retries_done: int, *, rand: Callable[[], float] = random.random) -> float:
    """0.5 s, 1 s, 2 s, 4 s, 4 s... each shortened by up to half, at random."""
    ceiling = min(BASE_DELAY_S * 2.0 ** min(retries_done, 30), MAX_DELAY_S)
    return ceiling * (1.0 - 0.5 * rand())


def next_delay(
    exc: BaseException,
    retries_done: int,
    max_retries: int,
    *,
    rand: Callable[[], float] = random.random,
    now: Callable[[], float] = time.time,
) -> float | None:
    """Seconds to wait before the next attempt, or None when this failure is final."""
    if retries_done >= max_retries or not is_retryable(exc):
        return None
    if isinstance(exc, anthropic.APIStatusError):
        asked = retry_after(exc.response.headers, now=now())
        if asked is not None:
            return asked if asked <= MAX_RETRY_AFTER_S else None
    return backoff(retries_done, rand=rand)
