"""`manage.py tandem_worker`: a tool worker, running tool calls queued by the web processes."""

from __future__ import annotations

import asyncio
import signal
import threading
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.tasks import task_backends

from chat.runtime import doorbells, engine
from tools import db_backend, db_worker


class Command(BaseCommand):
    help = "Run tool calls from the task queue (TASKS_BACKEND=tools.db_backend.DatabaseBackend)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--threads",
            type=int,
            default=settings.TANDEM_WORKER_THREADS,
            help="Tool calls running at once in this process.",
        )
        parser.add_argument(
            "--interval",
            type=float,
            default=1.0,
            help="Seconds between polls when no wake-up arrives (PostgreSQL wakes workers).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not isinstance(task_backends["default"], db_backend.DatabaseBackend):
            raise CommandError(
                "Tool workers need TASKS_BACKEND=tools.db_backend.DatabaseBackend "
                "(the web processes must enqueue there too)."
            )
        if options["threads"] < 1:
            raise CommandError("--threads must be at least 1.")
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        if settings.TANDEM_DOORBELLS:  # Cancel pressed on any web process reaches tools here
            threading.Thread(
                target=asyncio.run,
                args=(doorbells.listen_for_cancels(),),
                name="tandem-cancels",
                daemon=True,
            ).start()
        workers = db_worker.start(threads=options["threads"], interval=options["interval"])
        self.stdout.write(f"Tandem tool worker {engine.INSTANCE_ID}: {len(workers)} threads")
        self.stdout.flush()
        stop.wait()
        # Claim nothing more and leave; calls still running are re-run (safe_to_repeat) or
        # answered "interrupted" once their heartbeat expires, as after a crash.
        db_worker.stop(workers)
        self.stdout.write("Tandem tool worker stopped")
