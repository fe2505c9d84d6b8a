"""Tandem, served as `manage.py tandem` serves it, with database statements counted.

    python -m tests.bench.tandem_server --port 8000   (the environment as for manage.py)

The relay benchmark runs the measured Tandem server through this module instead of manage.py so
that it can count queries without any change to the app:

* every database connection gets an execute wrapper (``connection.execute_wrapper`` semantics,
  installed on ``connection_created``) counting statements, writes (INSERT/UPDATE/DELETE) and
  statements by verb and table;
* ``ConversationConsumer.conv_changed`` (a doorbell: the conversation changed, the tab asks the
  database what changed) is wrapped to count doorbells and to mark, through a context variable
  that asgiref carries into the database thread, the statements run on a doorbell's behalf;
* every hop to a database thread (``database_sync_to_async``) is timed where it runs: thread
  CPU and wall time by function, so a run says which hops cost the database threads' CPU;
* every garbage collection is timed, by generation.

On SIGUSR1 the counts are written as JSON to ``$BENCH_COUNTS_FILE`` (replaced atomically). The
wrappers cost a few microseconds per statement, counted in the server's CPU like the rest.
"""

from __future__ import annotations

import argparse
import contextvars
import gc
import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import Any

COUNTS_ENV = "BENCH_COUNTS_FILE"
SITES_ENV = "BENCH_QUERY_SITES"  # "1": statements are also counted by the app function running them
_WRITE = re.compile(r"\s*(INSERT|UPDATE|DELETE|REPLACE)\b", re.I)
_TABLE = re.compile(
    r'\s*(?:(SELECT)\b.*?\bFROM\s+"(\w+)"|(INSERT)\s+INTO\s+"(\w+)"|(UPDATE)\s+"(\w+)"'
    r'|(DELETE)\s+FROM\s+"(\w+)")',
    re.I | re.S,
)
_doorbell = contextvars.ContextVar("bench_doorbell", default=False)


def statement_kind(sql: str) -> str:
    """``SELECT chat_message``, ``UPDATE chat_message``, ``SAVEPOINT``...: verb and table."""
    match = _TABLE.match(sql)
    if match is None:
        return (sql.split(None, 1) or ["?"])[0].upper()
    verb, table = (g for g in match.groups() if g)
    return f"{verb.upper()} {table}"


class Counts:
    def __init__(self) -> None:
        self.lock = threading.RLock()  # the SIGUSR1 handler may interrupt a holder (main thread)
        self.values = dict.fromkeys(
            ("dumps", "queries", "writes", "doorbells", "doorbell_queries", "list_doorbells"), 0
        )
        self.kinds: dict[str, int] = {}  # statement_kind -> count
        self.hops: dict[str, list[float]] = {}  # function -> [hops, thread CPU s, wall s]
        self.gc: dict[str, list[float]] = {}  # "gen0".. -> [collections, total s, longest s]

    def hop(self, name: str, cpu_s: float, wall_s: float) -> None:
        with self.lock:
            entry = self.hops.setdefault(name, [0, 0.0, 0.0])
            entry[0] += 1
            entry[1] += cpu_s
            entry[2] += wall_s

    def collected(self, generation: int, seconds: float) -> None:
        with self.lock:
            entry = self.gc.setdefault(f"gen{generation}", [0, 0.0, 0.0])
            entry[0] += 1
            entry[1] += seconds
            entry[2] = max(entry[2], seconds)

    def add(self, kind: str = "", **amounts: int) -> None:
        with self.lock:
            for key, amount in amounts.items():
                self.values[key] += amount
            if kind:
                self.kinds[kind] = self.kinds.get(kind, 0) + 1

    def dump(self, path: Path) -> None:
        with self.lock:
            self.values["dumps"] += 1
            data: dict[str, object] = {
                **self.values,
                "kinds": dict(self.kinds),
                "hops": {name: list(entry) for name, entry in self.hops.items()},
                "gc": {name: list(entry) for name, entry in self.gc.items()},
            }
            for entry in self.gc.values():
                entry[2] = 0.0  # the longest collection is the longest since the last reading
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(path)


COUNTS = Counts()


def query_site() -> str:
    """The innermost ``chat.*`` function on the stack (``services.turns.claim_lease``)."""
    frame = sys._getframe(2)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("chat.") and module != "chat.services.conversations":
            return f"{module[5:]}.{frame.f_code.co_name}"
        frame = frame.f_back  # type: ignore[assignment]
    return "?"


_SITES = os.environ.get(SITES_ENV) == "1"


def count_statement(
    execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
) -> Any:
    kind = statement_kind(sql)
    COUNTS.add(
        f"{query_site()}: {kind}" if _SITES else kind,
        queries=1,
        writes=1 if _WRITE.match(sql) else 0,
        doorbell_queries=1 if _doorbell.get() else 0,
    )
    return execute(sql, params, many, context)


def time_hops() -> None:
    """Every ``database_sync_to_async`` call (a hop to a database thread) is timed in the thread
    that runs it: thread CPU and wall time, by function (``Counts.hops``)."""
    from channels.db import DatabaseSyncToAsync

    handler = DatabaseSyncToAsync.thread_handler

    def timed(self: Any, loop: Any, *args: Any, **kwargs: Any) -> Any:
        cpu, wall = time.thread_time(), time.perf_counter()
        try:
            return handler(self, loop, *args, **kwargs)
        finally:
            name = getattr(self.func, "__name__", "?")
            COUNTS.hop(name, time.thread_time() - cpu, time.perf_counter() - wall)

    DatabaseSyncToAsync.thread_handler = timed  # type: ignore[method-assign]


def time_collections() -> None:
    """Every garbage collection is timed (``Counts.gc``): a collection stops the whole process,
    every stream with it."""
    started: dict[int, float] = {}

    def on_collection(phase: str, info: dict[str, Any]) -> None:
        generation = info["generation"]
        if phase == "start":
            started[generation] = time.perf_counter()
        elif generation in started:
            COUNTS.collected(generation, time.perf_counter() - started.pop(generation))

    gc.callbacks.append(on_collection)


def install_counters() -> None:
    from django.db.backends.signals import connection_created

    from chat.sockets.consumers import ConversationConsumer, ConversationListConsumer

    def on_connection(sender: Any = None, connection: Any = None, **kwargs: Any) -> None:
        if connection is not None and count_statement not in connection.execute_wrappers:
            connection.execute_wrappers.append(count_statement)

    connection_created.connect(on_connection, weak=False, dispatch_uid="bench-count-statements")
    time_hops()
    time_collections()
    original = ConversationConsumer.conv_changed

    async def conv_changed(self: Any, event: dict[str, Any]) -> None:
        COUNTS.add(doorbells=1)
        token = _doorbell.set(True)
        try:
            await original(self, event)
        finally:
            _doorbell.reset(token)

    ConversationConsumer.conv_changed = conv_changed  # type: ignore[method-assign]
    list_original = ConversationListConsumer.convlist_changed

    async def convlist_changed(self: Any, event: dict[str, Any]) -> None:
        COUNTS.add(list_doorbells=1)
        await list_original(self, event)

    ConversationListConsumer.convlist_changed = convlist_changed  # type: ignore[method-assign]


LIVE_EVENTS = {
    "reply.delta",
    "reply.markdown",
    "reply.snapshot",
    "reply.tool_input",
    "tool.progress",
}
EXPERIMENT_ENV = "BENCH_EXPERIMENT"


def experiment_live_events_skip_db_thread() -> None:
    """What-if for issue 10, not a fix: live events skip Channels' per-event DB-thread hop.

    ``AsyncConsumer.dispatch`` runs ``close_old_connections`` through the one shared
    ``sync_to_async`` thread before every handler, so each delta to each tab queues behind the
    process's database work. Handlers that do touch the database go through
    ``database_sync_to_async``, which closes old connections itself.
    """
    from channels.consumer import get_handler_name

    from chat.sockets.consumers import ConversationConsumer

    original = ConversationConsumer.dispatch

    async def dispatch(self: Any, message: dict[str, Any]) -> None:
        if message["type"] in LIVE_EVENTS:
            await getattr(self, get_handler_name(message))(message)
            return
        await original(self, message)

    ConversationConsumer.dispatch = dispatch  # type: ignore[method-assign]


def experiment_runner_reads_off_thread() -> None:
    """What-if: the turn runner's pure reads (the next turn's input, whether more is due) run
    in reader threads, as the sockets' doorbell reads do, instead of the shared thread."""
    from channels.db import database_sync_to_async

    from chat.runtime import runner
    from chat.services import turns

    reads = {turns.load_turn_input, turns.is_due}

    def db(fn: Any) -> Any:
        return database_sync_to_async(fn, thread_sensitive=fn not in reads)

    runner.db = db  # type: ignore[assignment]


def experiment_switch_interval(ms: float) -> Callable[[], None]:
    """What-if: another GIL switch interval than settings.TANDEM_GIL_SWITCH_INTERVAL_MS (0.2 ms;
    Python's default is 5 ms), which project/asgi.py applies when the server imports it."""

    def apply() -> None:
        from django.conf import settings

        settings.TANDEM_GIL_SWITCH_INTERVAL_MS = ms

    return apply


def experiment_before_round_4() -> None:
    """What-if: the send path as it was before round 4 of issue 10, for a same-run comparison:
    the session check on the shared database thread (channels' ``get_user``), the rate check
    in a thread, the message stored in one hop and its turn claimed and begun in the runner's
    next hop (two doorbells), a reply's end and the lease's release in two hops, 6 reader
    threads (asyncio's default executor on 2 CPUs) and a 1 ms switch interval."""
    from asgiref.sync import sync_to_async
    from channels.auth import get_user
    from channels.db import database_sync_to_async
    from django.conf import settings

    from chat.services import messages, turns
    from chat.services.errors import UserInputError
    from chat.sockets import consumers, outbound, ratelimit, socket_auth

    settings.TANDEM_GIL_SWITCH_INTERVAL_MS = 1.0
    settings.TANDEM_DB_READER_THREADS = 6

    async def still_signed_in(scope: dict[str, Any]) -> bool:
        user, key = scope["user"], scope["session"].session_key
        fresh = import_module(settings.SESSION_ENGINE).SessionStore(key)
        current = await get_user({"session": fresh})
        return bool(current.is_authenticated and current.is_active and current.pk == user.pk)

    async def check_rate(self: Any) -> None:
        allow = sync_to_async(ratelimit.allow, thread_sensitive=False)
        if not await allow(self.scope["user"].pk, per_minute=settings.TANDEM_RATE_LIMIT_PER_MINUTE):
            raise UserInputError(consumers.TOO_FAST)

    async def do_send(self: Any, action: Any) -> None:
        await self.check_rate()
        await database_sync_to_async(messages.post_user_message)(self.conversation_id, action.text)
        await self.send(text_data=outbound.stored(action.ref))

    def finish_only(message_id: int, conversation_id: int, owner: str, **finish: Any) -> None:
        messages.finish_reply(message_id, **finish)  # the runner then releases in its own hop

    turns.finish_and_release = finish_only  # type: ignore[assignment]
    socket_auth.still_signed_in = still_signed_in  # type: ignore[assignment]
    consumers.ConversationConsumer.check_rate = check_rate  # type: ignore[method-assign]
    consumers.ConversationConsumer.actions["send"] = do_send


def experiment_before_round_5() -> None:
    """What-if: the live path as it was before round 5 of issue 10, for a same-run comparison:
    Channels' own loop over a socket's two inboxes (a task per message and ``asyncio.wait``),
    its hop through the shared database thread before every browser frame, the sockets' reads
    in reader threads on SQLite too, Python's default garbage collector, a client copied for
    every request, and the cursor, title and send confirmation rendered by the template
    engine."""
    from channels.consumer import AsyncConsumer, get_handler_name

    from chat.modelapi import client
    from chat.runtime import keepalive, runner
    from chat.sockets import consumers, outbound

    def render(partial: str, **context: object) -> Callable[..., str]:
        def build(*args: Any) -> str:
            names = {"cursor": ("seq", "rev"), "title": ("title",), "stored": ("stored_ref",)}
            values = dict(zip(names[partial], args, strict=True))
            template = "composer_error" if partial == "stored" else partial
            return outbound._render(template, **context, **values, oob=True)

        return build

    async def dispatch(self: Any, message: dict[str, Any]) -> None:
        if message["type"].startswith("websocket."):
            await AsyncConsumer.dispatch(self, message)  # with its hop
        else:
            await getattr(self, get_handler_name(message))(message)

    def copied_client() -> Any:
        return client.get_client().with_options(max_retries=0)

    experiment_reads_in_reader_threads()
    experiment_gc(False, 0)()
    consumers.GroupSocket.__call__ = AsyncConsumer.__call__  # type: ignore[method-assign]
    consumers.GroupSocket.dispatch = dispatch  # type: ignore[method-assign]
    runner.get_client_without_retries = copied_client  # type: ignore[attr-defined]
    keepalive.get_client_without_retries = copied_client  # type: ignore[attr-defined]
    outbound.cursor = render("cursor")  # type: ignore[assignment]
    outbound.title = render("title")  # type: ignore[assignment]
    outbound.stored = render("stored", error_text="")  # type: ignore[assignment]


def experiment_reads_in_reader_threads() -> None:
    """What-if: the sockets' reads in reader threads on SQLite too (``TANDEM_DB_READS_OFF_THREAD``
    on), as before round 5: three threads, not one, take the GIL back after each SQLite call."""
    from django.conf import settings

    settings.TANDEM_DB_READS_OFF_THREAD = True


def experiment_gc(freeze: bool, gen0: int) -> Callable[[], None]:
    """What-if: another garbage collector set-up than settings.TANDEM_GC_FREEZE (on) and
    TANDEM_GC_GEN0_THRESHOLD (20,000), which ``manage.py tandem`` applies once its loop is up;
    gen0 0 keeps Python's default threshold (2,000)."""

    def apply() -> None:
        from django.conf import settings

        settings.TANDEM_GC_FREEZE = freeze
        settings.TANDEM_GC_GEN0_THRESHOLD = gen0

    return apply


def experiment_readers(count: int) -> Callable[[], None]:
    """What-if: another number of reader threads than settings.TANDEM_DB_READER_THREADS (2);
    6 is what asyncio's default executor, which served these reads before, has on 2 CPUs."""

    def apply() -> None:
        from django.conf import settings

        settings.TANDEM_DB_READER_THREADS = count

    return apply


EXPERIMENTS = {
    "switch-interval-5ms": experiment_switch_interval(5.0),
    "switch-interval-1ms": experiment_switch_interval(1.0),
    "switch-interval-0.5ms": experiment_switch_interval(0.5),
    "switch-interval-0.2ms": experiment_switch_interval(0.2),
    "live-events-skip-db-thread": experiment_live_events_skip_db_thread,
    "runner-reads-off-thread": experiment_runner_reads_off_thread,
    "before-round-4": experiment_before_round_4,
    "before-round-5": experiment_before_round_5,
    "readers-6": experiment_readers(6),
    "readers-1": experiment_readers(1),
    "gc-untuned": experiment_gc(False, 0),
    "gc-freeze-only": experiment_gc(True, 0),
    "gc-gen0-50k": experiment_gc(True, 50_000),
    "reads-in-reader-threads": experiment_reads_in_reader_threads,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    import django
    from django.core.management import call_command

    django.setup()
    install_counters()
    for name in filter(None, os.environ.get(EXPERIMENT_ENV, "").split(",")):
        EXPERIMENTS[name]()
    counts_file = Path(os.environ[COUNTS_ENV])
    signal.signal(signal.SIGUSR1, lambda signum, frame: COUNTS.dump(counts_file))
    call_command("tandem", host=args.host, port=args.port, no_demo=True)


if __name__ == "__main__":
    main()
