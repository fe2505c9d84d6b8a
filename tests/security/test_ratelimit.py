"""The per-user message rate limit: a sliding minute, per user, shared through the cache."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from chat.sockets import ratelimit

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/0"


def attempts(user_id: int, n: int, *, at: float, per_minute: int = 3) -> list[bool]:
    return [ratelimit.allow(user_id, per_minute=per_minute, now=at) for _ in range(n)]


def test_it_allows_the_limit_then_refuses() -> None:
    assert attempts(1, 5, at=600.0) == [True, True, True, False, False]


def test_it_counts_each_user_apart() -> None:
    assert attempts(1, 4, at=600.0) == [True, True, True, False]
    assert attempts(2, 1, at=600.0) == [True]


def test_it_lets_a_user_through_again_after_a_minute() -> None:
    assert attempts(1, 4, at=600.0) == [True, True, True, False]
    assert attempts(1, 4, at=720.0) == [True, True, True, False]


def test_it_allows_no_double_burst_across_a_minute_boundary() -> None:
    assert attempts(1, 3, at=659.0) == [True, True, True]
    assert attempts(1, 1, at=661.0) == [False]  # the last minute still holds three


def test_it_frees_the_budget_gradually_as_the_window_slides() -> None:
    assert attempts(1, 3, at=600.0) == [True, True, True]
    assert attempts(1, 3, at=700.0) == [True, True, False]  # 40 s in: 1 of the 3 still counts


def test_it_forgets_everything_on_reset() -> None:
    assert attempts(1, 4, at=600.0)[-1] is False
    ratelimit.reset()
    assert attempts(1, 1, at=600.0) == [True]


@pytest.mark.redis
def test_it_shares_the_count_between_processes_through_redis(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.CACHES = {  # what project.settings configures when REDIS_URL is set
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "tandem",
        }
    }
    monkeypatch.setattr(ratelimit, "_generation", 0)  # as in a fresh server process
    user_id = uuid.uuid4().int % 10**12
    now = time.time()
    script = (
        "import django; django.setup(); from chat.sockets import ratelimit; "
        f"print([ratelimit.allow({user_id}, per_minute=3, now={now}) for _ in range(2)])"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "project.settings", "REDIS_URL": REDIS_URL}
    env.update({"SECRET_KEY": "ratelimit-test", "DEBUG": "false"})
    other = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert other.stdout.strip() == "[True, True]"
    assert attempts(user_id, 2, at=now) == [True, False]  # the other process used two of three


def test_it_runs_in_process_only_on_a_local_memory_cache(settings: Any) -> None:
    """In local memory the check runs on the event loop (no thread hop); Redis is I/O."""
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    assert ratelimit.in_process()
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    }
    assert not ratelimit.in_process()


async def test_from_the_loop_it_counts_as_allow_does() -> None:
    """In local memory the check runs on the loop itself, against the same counts."""
    results = [await ratelimit.allow_from_loop(77, per_minute=2) for _ in range(3)]
    assert results == [True, True, False]
