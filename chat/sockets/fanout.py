"""What a doorbell tells the tabs: the change itself where the writer says it, else one read per
process and cursor, however many tabs wait.

**Carried** (``describe``, the writer's side; ``TANDEM_CARRY_CHANGES``, off by default: in one
process it measured no cheaper than the shared read, README "Live path performance"). After
the commit that rang, in the database hop it makes anyway, the writer reads the changes since
the cursor the conversation's last bell brought the tabs to and renders them once
(``chat.sockets.digest``); the bell carries that digest and its start cursor. A tab at that
cursor takes it without a read (``TabState.takes``), so the tabs that follow along never read.
A digest is exactly what a tab at its start would have read at that moment, whatever else
committed meanwhile: a tab anywhere else (it missed a bell, read ahead, or its reply's live
frames went further than the digest's text) reads instead, and a wrong guess costs a read,
never a wrong page. A process builds digests only where a tab may hear them: with several
processes (Redis: the tabs are elsewhere) always, with one only for conversations a tab here
follows.

**Read** (``changes_since``, a tab's side): a sync, a resync, a late delta, a bell that carries
nothing or does not fit. The tabs at one cursor share one read while it is in flight (never
cached after: a later question may need later data), and each tab then adds only what depends
on its own state (``TabState.apply_changes``: cards, title, cursor).

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
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from chat.queries import thread
from chat.runtime import events
from chat.sockets import digest
from chat.sockets.digest import Digest

logger = logging.getLogger(__name__)

Key = tuple[int, int, int, bool]
# key -> (the read, wall-clock time it began)
_in_flight: dict[Key, tuple[asyncio.Task[Digest | None], float]] = {}


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


def _load(conversation_id: int, seq: int, rev: int, resync: bool) -> Digest | None:
    changes = thread.changes_since(conversation_id, seq, rev, resync=resync)
    if changes is None:
        return None
    found = digest.build(changes)
    if settings.TANDEM_CARRY_CHANGES and not resync:  # (a resync starts at the page's word)
        _tell(conversation_id, (found.seq, found.rev))  # the tabs that read are here now
    return found


async def changes_since(
    conversation_id: int,
    seq: int,
    rev: int,
    *,
    resync: bool = False,
    rung_at: float | None = None,
) -> Digest | None:
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


def _forget(key: Key, task: asyncio.Task[Digest | None]) -> None:
    entry = _in_flight.get(key)
    if entry is not None and entry[0] is task:
        del _in_flight[key]
    if not task.cancelled():
        task.exception()  # retrieved: every waiter has it raised already


# --- the writer's side: a doorbell that carries its change -----------------------------------

# conversation id -> the cursor the last digest of it brought the tabs to, most recent last
_told: OrderedDict[int, tuple[int, int]] = OrderedDict()
_told_lock = threading.Lock()
TOLD_MAX = 10_000
CARRIED_MAX_CHARS = 256_000  # a bigger change travels as a plain doorbell: each process reads it


def followed_here(conversation_id: int) -> bool:
    """Whether a socket of this process follows the conversation: its group has members in
    the process's own channel layer (chat.runtime.layer; a Redis layer's groups are not all
    here, and ``describe`` does not ask it)."""
    groups = getattr(get_channel_layer(), "groups", None)
    return bool(groups and groups.get(events.conversation_group(conversation_id)))


def describe(conversation_id: int) -> dict[str, Any] | None:
    """What a conversation's doorbell carries besides its time, if this process can say: the
    changes since the cursor its last doorbell brought the tabs to (``start``), as a digest.

    Runs in the writer's thread, after the commit that rang (``chat.runtime.events``), in the
    database hop the writer makes anyway: a tab at ``start`` takes the digest and reads
    nothing; any other tab reads as before (``TabState.takes``). A digest is exactly what a
    tab at ``start`` would have read at that moment, whatever else committed meanwhile, so a
    wrong guess of ``start`` costs a read, never a wrong page.

    Only with ``TANDEM_CARRY_CHANGES`` on, and only where a tab may hear it: with several
    processes (a Redis layer, whose tabs this process cannot see) always; with one, when a
    tab here follows the conversation.
    """
    if not settings.TANDEM_CARRY_CHANGES:
        return None
    if not (settings.TANDEM_DOORBELLS or followed_here(conversation_id)):
        with _told_lock:
            _told.pop(conversation_id, None)
        return None
    with _told_lock:
        start = _told.get(conversation_id)
    if start is None:  # no bell here yet: the tabs read this one, and the next is carried
        cursor = thread.cursor(conversation_id)
        if cursor is not None:
            _tell(conversation_id, cursor)
        return None
    changes = thread.changes_since(conversation_id, *start)
    if changes is None:
        with _told_lock:
            _told.pop(conversation_id, None)
        return None
    found = digest.build(changes)
    _tell(conversation_id, (found.seq, found.rev))
    if digest.size(found) > CARRIED_MAX_CHARS:
        return None
    return {"start": start, "digest": found}


def _tell(conversation_id: int, cursor: tuple[int, int]) -> None:
    """Where the tabs here stand, as far as this process has seen: a digest it built or took,
    or a read. Only ever forward (a cursor's seq and rev only grow), from any thread."""
    with _told_lock:
        known = _told.get(conversation_id)
        if known is not None and (known[1], known[0]) >= (cursor[1], cursor[0]):
            return
        _told[conversation_id] = cursor
        _told.move_to_end(conversation_id)
        while len(_told) > TOLD_MAX:
            _told.popitem(last=False)


def carried(conversation_id: int, bell: dict[str, Any]) -> tuple[tuple[int, int], Digest] | None:
    """The start cursor and digest a conversation's doorbell carries, if it carries one it can
    read (else the tab reads, as for a plain bell). Another process may have built it: its
    end is where the tabs here stand once they take it, and where this process's next digest
    starts (``_tell``)."""
    wire = bell.get("digest")
    if wire is None:
        return None
    try:
        seq, rev = bell["start"]
        found = wire if isinstance(wire, Digest) else digest.from_wire(wire)
    except (TypeError, ValueError):  # from a process of another version, say
        logger.warning("a doorbell's change could not be read; the tab reads", exc_info=True)
        return None
    _tell(conversation_id, (found.seq, found.rev))
    return (int(seq), int(rev)), found
