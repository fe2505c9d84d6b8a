"""Tandem, served as `manage.py tandem` serves it, with database statements counted.

    python -m tests.bench.tandem_server --port 8000   (the environment as for manage.py)

The relay benchmark runs the measured Tandem server through this module instead of manage.py so
that it can count queries without any change to the app:

* every database connection gets an execute wrapper (``connection.execute_wrapper`` semantics,
  installed on ``connection_created``) counting statements, writes (INSERT/UPDATE/DELETE) and
  statements by verb and table;
* ``ConversationConsumer.conv_changed`` (a doorbell: the conversation changed; the tab takes the
  change the bell carries, or asks the database) is wrapped to count doorbells and to mark,
  through a context variable that asgiref carries into the database thread, the statements run
  on a doorbell's behalf; the doorbells taken without a read and the statements the writers run
  to describe their changes for the bell are counted too;
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
from pathlib import Path
from typing import Any

from tests.bench.tandem_experiments import EXPERIMENT_ENV, EXPERIMENTS

COUNTS_ENV = "BENCH_COUNTS_FILE"
SITES_ENV = "BENCH_QUERY_SITES"  # "1": statements are also counted by the app function running them
_WRITE = re.compile(r"\s*(INSERT|UPDATE|DELETE|REPLACE)\b", re.I)
_TABLE = re.compile(
    r'\s*(?:(SELECT)\b.*?\bFROM\s+"(\w+)"|(INSERT)\s+INTO\s+"(\w+)"|(UPDATE)\s+"(\w+)"'
    r'|(DELETE)\s+FROM\s+"(\w+)")',
    re.I | re.S,
)
_doorbell = contextvars.ContextVar("bench_doorbell", default=False)
_describing = contextvars.ContextVar("bench_describing", default=False)


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
            (
                "dumps",
                "queries",
                "writes",
                "doorbells",
                "doorbell_queries",
                "carried",
                "describe_queries",
                "list_doorbells",
            ),
            0,
        )
        self.kinds: dict[str, int] = {}  # statement_kind -> count
        self.hops: dict[str, list[float]] = {}  # function -> [hops, thread CPU s, wall s]
        # "gen0".. -> [collections, total s, longest s]; all there from the start, so that a
        # collection during a dump (a callback in the same thread) never adds a key
        self.gc: dict[str, list[float]] = {f"gen{g}": [0, 0.0, 0.0] for g in range(3)}

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
        if module.startswith("chat.") and module not in (
            "chat.services.conversations",
            "chat.compiled",
        ):
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
        describe_queries=1 if _describing.get() else 0,
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


def count_carried_changes() -> None:
    """The statements a writer runs to describe its change for the bell
    (``describe_queries``), and the doorbells a tab took without reading (``carried``)."""
    from chat.runtime import events
    from chat.sockets.tab_state import TabState

    describe = events._describe
    if describe is not None:

        def described(conversation_id: int) -> Any:
            token = _describing.set(True)
            try:
                return describe(conversation_id)
            finally:
                _describing.reset(token)

        events.describe_changes_with(described)
    takes = TabState.takes

    def counted(self: Any, start: Any, digest: Any) -> bool:
        taken = takes(self, start, digest)
        COUNTS.add(carried=1 if taken else 0)
        return taken

    TabState.takes = counted  # type: ignore[method-assign]


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
    count_carried_changes()
    list_original = ConversationListConsumer.convlist_changed

    async def convlist_changed(self: Any, event: dict[str, Any]) -> None:
        COUNTS.add(list_doorbells=1)
        await list_original(self, event)

    ConversationListConsumer.convlist_changed = convlist_changed  # type: ignore[method-assign]


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
