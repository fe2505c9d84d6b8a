"""A small model of prompt caching, so usage reports plausible cache reads and writes.

The prompt is a sequence of segments in cache order (tools, system, message blocks); each
`cache_control` marks a breakpoint whose prefix is identified by a running hash. A request reads
the longest live cached prefix ending at a breakpoint or at one of the 20 block boundaries
before it (the API's automatic look-back, which lets a breakpoint that moved on to the newest
turn still hit the entry the previous turn wrote), and writes the prefix up to its last
breakpoint when that is longer and above the minimum size. Entries live 5 minutes (or 1 hour
with ``"ttl": "1h"``), measured from the start of the request, and every hit refreshes them.
Written tokens are reported split by lifetime (``cache_creation``), as the API does: those up to
the last 1-hour breakpoint (which comes before any 5-minute one) at 1 hour, the rest at 5
minutes. Tokens are approximated as characters / 4.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .turns import merge_turns

MIN_CACHEABLE_TOKENS = 1024
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
LOOKBACK_BLOCKS = 20
_MAX_ENTRIES = 4096


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_1h_input_tokens: int = 0  # part of cache_creation_input_tokens


@dataclass(frozen=True)
class _Breakpoint:
    tokens: int
    key: str
    ttl: float
    lookback: tuple[tuple[int, str], ...] = ()  # (tokens, key) of the boundaries before it


def _tokens(value: Any) -> int:
    return max(1, len(json.dumps(value, ensure_ascii=False, separators=(",", ":"))) // 4)


def _segments(body: dict[str, Any]) -> list[dict[str, Any]]:
    segments: list[dict[str, Any]] = list(body.get("tools") or [])
    system = body.get("system")
    if isinstance(system, str) and system:
        segments.append({"type": "text", "text": system})
    elif isinstance(system, list):
        segments.extend(system)
    for turn in merge_turns(body.get("messages") or []):
        segments.append({"role": turn.role})
        segments.extend(turn.blocks)
    return segments


def count_input_tokens(body: dict[str, Any]) -> int:
    """All input tokens of a request (what count_tokens answers)."""
    return 3 + sum(_tokens(_strip(segment)) for segment in _segments(body))


def _strip(segment: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in segment.items() if key != "cache_control"}


class PromptCache:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._expiry: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (ttl, end)

    def usage(self, body: dict[str, Any]) -> Usage:
        """The usage of a request, reading and writing the cache as the API would."""
        now = self._clock()
        total = 3
        running = hashlib.sha256(str(body.get("model")).encode())
        boundaries: list[tuple[int, str]] = []
        breakpoints: list[_Breakpoint] = []
        for segment in _segments(body):
            stripped = _strip(segment)
            total += _tokens(stripped)
            running.update(json.dumps(stripped, sort_keys=True).encode())
            boundaries.append((total, running.hexdigest()))
            control = segment.get("cache_control")
            if isinstance(control, dict):
                ttl = TTL_SECONDS.get(str(control.get("ttl", "5m")), 300.0)
                earlier = tuple(reversed(boundaries[-LOOKBACK_BLOCKS - 1 : -1]))
                breakpoints.append(_Breakpoint(total, running.hexdigest(), ttl, earlier))
        with self._lock:
            read = self._read(breakpoints, now)
            written = self._write(breakpoints, read, now)
        one_hour = [p.tokens for p in breakpoints if p.ttl == TTL_SECONDS["1h"]]
        written_1h = min(written, max(0, one_hour[-1] - read)) if one_hour and written else 0
        return Usage(total - read - written, written, read, written_1h)

    def _read(self, breakpoints: list[_Breakpoint], now: float) -> int:
        for point in reversed(breakpoints):
            for tokens, key in ((point.tokens, point.key), *point.lookback):
                entry = self._expiry.get(key)
                if entry is not None and entry[1] > now:
                    self._expiry[key] = (entry[0], now + entry[0])
                    self._expiry.move_to_end(key)
                    return tokens
        return 0

    def _write(self, breakpoints: list[_Breakpoint], read: int, now: float) -> int:
        if not breakpoints or breakpoints[-1].tokens <= read:
            return 0
        if breakpoints[-1].tokens < MIN_CACHEABLE_TOKENS:
            return 0  # below the minimum nothing is cached, silently
        for point in breakpoints:
            if point.tokens >= MIN_CACHEABLE_TOKENS:
                self._expiry[point.key] = (point.ttl, now + point.ttl)
                self._expiry.move_to_end(point.key)
        while len(self._expiry) > _MAX_ENTRIES:
            self._expiry.popitem(last=False)
        return breakpoints[-1].tokens - read
