"""What the benchmarks share: reading frames, counting database writes, summing up figures.

Pure helpers plus one context manager; no timing targets live here (the benchmarks print
figures and assert only that the run itself was sound).
"""

from __future__ import annotations

import html
import re
import statistics
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from channels.db import database_sync_to_async
from django.db import connection as db_connection
from django.db.backends.signals import connection_created

_ARTICLE = re.compile(r'<article id="msg-(\d+)" class="msg role-(\w+) kind-(\w+) status-(\w+)')
# A reply streams as Markdown (chat.markdown_stream): the whole stream element (a bubble, a
# snapshot), or a live frame of blocks added before the open block and the open block anew.
# Markdown holds no <div>, so the first </div> after it ends it.
_STREAM = re.compile(
    r'<div id="msg-(\d+)-stream" class="body markdown stream"[^>]*>(.*?)'
    r'<div id="msg-\1-open" class="stream-open">(.*?)</div></div>',
    re.S,
)
_ADDED = re.compile(r'<div hx-swap-oob="beforebegin:#msg-(\d+)-open">(.*?)</div>', re.S)
_OPEN = re.compile(
    r'<div id="msg-(\d+)-open" class="stream-open" hx-swap-oob="true">(.*?)</div>', re.S
)
_TAG = re.compile(r"<[^>]+>")
_ERROR = re.compile(r'<div id="composer-error"[^>]*>(.*?)</div>', re.S)


@dataclass(frozen=True)
class Article:
    id: int
    role: str
    kind: str
    status: str


@dataclass
class Frame:
    """What one WebSocket frame carries, as far as the benchmarks care."""

    articles: list[Article] = field(default_factory=list)
    # (message id, text of the finished blocks, text of the open block): a whole stream
    streams: list[tuple[int, str, str]] = field(default_factory=list)
    # (message id, text of the blocks added, text of the open block): a live Markdown frame
    markdown: list[tuple[int, str, str]] = field(default_factory=list)
    error: str | None = None

    @property
    def text_ids(self) -> set[int]:
        """Messages this frame shows streamed text for (a live frame, or a bubble with text)."""
        return {m for m, *_ in self.markdown} | {
            m for m, done, open_text in self.streams if (done + open_text).strip()
        }


def text_of(markup: str) -> str:
    """The text a piece of (sanitized, tag-balanced) HTML shows."""
    return html.unescape(_TAG.sub("", markup))


def parse(raw: str) -> Frame:
    opens = {int(i): text_of(t) for i, t in _OPEN.findall(raw)}
    added = {int(i): text_of(t) for i, t in _ADDED.findall(raw)}
    frame = Frame(
        articles=[Article(int(i), r, k, s) for i, r, k, s in _ARTICLE.findall(raw)],
        streams=[(int(i), text_of(d), text_of(o)) for i, d, o in _STREAM.findall(raw)],
        markdown=[(m, added.get(m, ""), text) for m, text in opens.items()],
    )
    error = _ERROR.search(raw)
    if error is not None:
        frame.error = html.unescape(error.group(1)).strip()
    return frame


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(min(rank, len(ordered))) - 1]


def summary_ms(values_s: list[float]) -> str:
    """Count, median (p50), p90, p99 and max of seconds, in milliseconds."""
    if not values_s:
        return "no samples"
    ms = [v * 1000 for v in values_s]
    return (
        f"n={len(ms)} p50={median(ms):.1f} p90={percentile(ms, 90):.1f} "
        f"p99={percentile(ms, 99):.1f} max={max(ms):.1f} ms"
    )


def median(values: list[float]) -> float:
    return statistics.median(values)


_WRITE = re.compile(r'^\s*(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?(\w+)"?', re.I)


class WriteCounter:
    """An execute wrapper counting INSERT/UPDATE/DELETE statements by verb and table."""

    def __init__(self) -> None:
        self.active = True
        self.by_table: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        match = _WRITE.match(sql) if self.active else None
        if match is not None:
            verb = match.group(1).split()[0].upper()
            with self._lock:
                self.by_table[f"{verb} {match.group(2)}"] += 1
        return execute(sql, params, many, context)

    @property
    def total(self) -> int:
        return sum(self.by_table.values())

    def report(self) -> str:
        return ", ".join(f"{k}: {v}" for k, v in sorted(self.by_table.items()))


@asynccontextmanager
async def count_writes() -> AsyncIterator[WriteCounter]:
    """Count writes on the ORM's connections while the block runs.

    Tandem's ORM calls run in asgiref's sync thread (``database_sync_to_async``), so the
    wrapper is installed there, on the connection that thread uses; ``connection_created``
    adds it to any connection opened during the block, wherever that happens.
    """
    counter = WriteCounter()

    def install(sender: Any = None, connection: Any = None, **kwargs: Any) -> None:
        target = connection if connection is not None else db_connection
        if counter not in target.execute_wrappers:
            target.execute_wrappers.append(counter)

    uid = f"bench-writes-{id(counter)}"
    connection_created.connect(install, weak=False, dispatch_uid=uid)
    await database_sync_to_async(install)()
    try:
        yield counter
    finally:
        connection_created.disconnect(dispatch_uid=uid)
        counter.active = False
        await database_sync_to_async(_uninstall)(counter)


def _uninstall(counter: WriteCounter) -> None:
    if counter in db_connection.execute_wrappers:
        db_connection.execute_wrappers.remove(counter)
