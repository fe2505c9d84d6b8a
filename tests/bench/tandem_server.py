"""Tandem, served as `manage.py tandem` serves it, with database statements counted.

    python -m tests.bench.tandem_server --port 8000   (the environment as for manage.py)

The relay benchmark runs the measured Tandem server through this module instead of manage.py so
that it can count queries without any change to the app:

* every database connection gets an execute wrapper (``connection.execute_wrapper`` semantics,
  installed on ``connection_created``) counting statements and writes (INSERT/UPDATE/DELETE);
* ``ConversationConsumer.conv_changed`` (a doorbell: the conversation changed, the tab asks the
  database what changed) is wrapped to count doorbells and to mark, through a context variable
  that asgiref carries into the database thread, the statements run on a doorbell's behalf.

On SIGUSR1 the counts are written as JSON to ``$BENCH_COUNTS_FILE`` (replaced atomically). The
wrappers cost a few microseconds per statement, counted in the server's CPU like the rest.
"""

from __future__ import annotations

import argparse
import contextvars
import json
import os
import re
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

COUNTS_ENV = "BENCH_COUNTS_FILE"
_WRITE = re.compile(r"\s*(INSERT|UPDATE|DELETE|REPLACE)\b", re.I)
_doorbell = contextvars.ContextVar("bench_doorbell", default=False)


class Counts:
    def __init__(self) -> None:
        self.lock = threading.RLock()  # the SIGUSR1 handler may interrupt a holder (main thread)
        self.values = dict.fromkeys(
            ("dumps", "queries", "writes", "doorbells", "doorbell_queries", "list_doorbells"), 0
        )

    def add(self, **amounts: int) -> None:
        with self.lock:
            for key, amount in amounts.items():
                self.values[key] += amount

    def dump(self, path: Path) -> None:
        with self.lock:
            self.values["dumps"] += 1
            data = dict(self.values)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(path)


COUNTS = Counts()


def count_statement(
    execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
) -> Any:
    COUNTS.add(
        queries=1,
        writes=1 if _WRITE.match(sql) else 0,
        doorbell_queries=1 if _doorbell.get() else 0,
    )
    return execute(sql, params, many, context)


def install_counters() -> None:
    from django.db.backends.signals import connection_created

    from chat.consumers import ConversationConsumer, ConversationListConsumer

    def on_connection(sender: Any = None, connection: Any = None, **kwargs: Any) -> None:
        if connection is not None and count_statement not in connection.execute_wrappers:
            connection.execute_wrappers.append(count_statement)

    connection_created.connect(on_connection, weak=False, dispatch_uid="bench-count-statements")
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
    counts_file = Path(os.environ[COUNTS_ENV])
    signal.signal(signal.SIGUSR1, lambda signum, frame: COUNTS.dump(counts_file))
    call_command("tandem", host=args.host, port=args.port, no_demo=True)


if __name__ == "__main__":
    main()
