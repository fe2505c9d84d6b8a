"""What a doorbell asks the database, asked once per process and cursor, however many tabs wait.

A doorbell (``conv.changed``) reaches every open tab of a conversation at the same moment, and
the tabs that follow along sit at the same cursor, so they need the same answer. The first tab
to ask reads the changes and renders their messages; the others at that cursor wait for that
answer instead of asking again (a read shared while it is in flight, never cached after: a
later question may need later data). Each tab then adds only what depends on its own state
(``TabState.apply_changes``: cards, title, cursor).

Where the reads run (``reads_off_thread``): on PostgreSQL in reader threads
(``thread_sensitive=False``: a connection per thread), so that their waits on the server's
replies overlap the shared database thread's. On SQLite every query is CPU in this process, and
each thread that runs them takes the GIL back from the event loop after every SQLite call: there
the reads share the one database thread with the writes, which measured cheaper and sooner
than reader threads beside it (README "Live path performance"). ``TANDEM_DB_READS_OFF_THREAD``
overrides the choice; an in-memory SQLite database (the test database) exists per connection,
so its reads always stay on the shared thread. The readers are a pool of their own,
``TANDEM_DB_READER_THREADS`` (2) strong: at 100 streams two threads served the reads sooner
than asyncio's default pool of six.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from chat.queries import thread
from chat.queries.thread import Changes
from chat.sockets import outbound


@dataclass
class Rendered:
    """Changes with their messages rendered once, for every tab at the same cursor."""

    changes: Changes
    new: str = ""  # the new messages, appended to the thread
    replaced: dict[int, str] = field(default_factory=dict)  # message id -> its replacement


Key = tuple[int, int, int, bool]
# key -> (the read, wall-clock time it began)
_in_flight: dict[Key, tuple[asyncio.Task[Rendered | None], float]] = {}


def reads_off_thread() -> bool:
    """Whether the sockets' reads run in reader threads: ``TANDEM_DB_READS_OFF_THREAD`` when
    set, else on every database but SQLite. Never on an in-memory SQLite (a database per
    connection)."""
    connection: Any = connections[DEFAULT_DB_ALIAS]
    sqlite = connection.vendor == "sqlite"
    if sqlite and connection.is_in_memory_db():
        return False
    chosen: bool | None = settings.TANDEM_DB_READS_OFF_THREAD
    return not sqlite if chosen is None else chosen


_readers: ThreadPoolExecutor | None = None
_readers_lock = threading.Lock()


def reader_pool() -> ThreadPoolExecutor:
    global _readers
    with _readers_lock:
        if _readers is None:
            _readers = ThreadPoolExecutor(
                settings.TANDEM_DB_READER_THREADS, thread_name_prefix="tandem-reader"
            )
        return _readers


def read(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` as a coroutine function that runs in a reader thread where that is safe."""
    if not reads_off_thread():
        shared: Callable[..., Any] = database_sync_to_async(fn)
        return shared
    wrapped: Callable[..., Any] = database_sync_to_async(
        fn, thread_sensitive=False, executor=reader_pool()
    )
    return wrapped


def _load(conversation_id: int, seq: int, rev: int, resync: bool) -> Rendered | None:
    changes = thread.changes_since(conversation_id, seq, rev, resync=resync)
    if changes is None:
        return None
    return Rendered(
        changes,
        new=outbound.append_messages(changes.new),
        replaced={view.id: outbound.replace_message(view) for view in changes.changed},
    )


async def changes_since(
    conversation_id: int,
    seq: int,
    rev: int,
    *,
    resync: bool = False,
    rung_at: float | None = None,
) -> Rendered | None:
    """What a tab at (seq, rev) lacks, rendered; None if the conversation is gone.

    ``rung_at``: when the doorbell this answers rang. A read already in flight is shared only
    if it began after that, so it sees the change the bell announced (a read begun earlier may
    have missed it); without a time (sync, resync, a late delta) the tab reads for itself."""
    key = (conversation_id, seq, rev, resync)
    entry = _in_flight.get(key)
    if entry is not None and rung_at is not None and entry[1] >= rung_at:
        task = entry[0]
    else:
        began = time.time()
        task = asyncio.ensure_future(read(_load)(conversation_id, seq, rev, resync))
        _in_flight[key] = (task, began)
        task.add_done_callback(lambda done: _forget(key, done))
    # A tab that closes while it waits must not cancel the read the others wait for.
    return await asyncio.shield(task)


def _forget(key: Key, task: asyncio.Task[Rendered | None]) -> None:
    entry = _in_flight.get(key)
    if entry is not None and entry[0] is task:
        del _in_flight[key]
    if not task.cancelled():
        task.exception()  # retrieved: every waiter has it raised already
