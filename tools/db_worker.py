"""A tool worker process: threads running django-tasks-db's worker, woken when a task arrives.

django-tasks-db's ``db_worker`` runs one task at a time and sleeps a poll interval between
empty polls. Tool calls run for seconds to minutes, so one process runs several of those
workers in threads (``threads``), each claiming tasks with the library's own claim
(``SELECT ... FOR UPDATE SKIP LOCKED``, then ``claim``) and running them with its own
``run_task``. Instead of sleeping, an idle thread waits on a ``Bell`` that a listener thread
rings on PostgreSQL's ``NOTIFY`` (``tools.db_backend``); the poll interval stays as the
fallback for a lost notification.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Any

from django.db import close_old_connections, connections, router
from django.db.utils import OperationalError
from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_db.models import DBTaskResult
from django_tasks_db.utils import exclusive_transaction, is_locked_database_exception

from tools.db_backend import WAKE_CHANNEL

logger = logging.getLogger(__name__)


class Bell:
    """Idle threads wait here until rung (a task arrived) or until their poll interval ends."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.rings = 0
        self.stopping = False

    def ring(self) -> None:
        with self._cond:
            self.rings += 1
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self.stopping = True
            self._cond.notify_all()

    def wait(self, seen: int, timeout: float) -> None:
        """Return when rung since ``seen`` (a count read before looking for work), or later."""
        with self._cond:
            self._cond.wait_for(lambda: self.rings != seen or self.stopping, timeout)


class WakingWorker(Worker):
    """django-tasks-db's worker, waiting on the bell instead of sleeping."""

    def __init__(self, bell: Bell, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bell = bell

    def run(self) -> None:
        try:
            while self.running and not self.bell.stopping:
                seen = self.bell.rings
                close_old_connections()
                task_result = self.claim_one()
                if task_result is not None:
                    self.run_task(task_result)
                    continue
                self.bell.wait(seen, self.interval)
        finally:
            connections.close_all()

    def claim_one(self) -> DBTaskResult[Any, Any] | None:
        tasks = DBTaskResult.objects.ready().filter(
            backend_name=self.backend_name, queue_name__in=self.queue_names
        )
        try:
            with exclusive_transaction(tasks.db):
                task_result = tasks.get_locked()
                if task_result is not None:
                    task_result.claim(self.worker_id)  # so no other worker runs it
                return task_result
        except OperationalError as exc:
            if is_locked_database_exception(exc):
                return None
            raise


def listen(bell: Bell, *, retry_s: float = 1.0) -> None:
    """Ring the bell on every NOTIFY (PostgreSQL); reconnect after a failure. Runs for ever."""
    alias = router.db_for_write(DBTaskResult)
    while not bell.stopping:
        connection = connections[alias]
        if connection.vendor != "postgresql":
            return  # no notifications: the workers poll
        try:
            connection.ensure_connection()
            raw = connection.connection
            raw.autocommit = True
            raw.execute(f"LISTEN {WAKE_CHANNEL}")
            bell.ring()  # anything enqueued while we were not listening
            while not bell.stopping:
                for _ in raw.notifies(timeout=1.0):
                    bell.ring()
        except Exception:
            logger.warning("listening for new tasks failed; trying again", exc_info=True)
            connection.close()
            time.sleep(retry_s)


def start(*, threads: int, interval: float, backend_name: str = "default") -> list[WakingWorker]:
    """Start the listener and ``threads`` workers (daemon threads); returns the workers."""
    bell = Bell()
    host = socket.gethostname()[:40]
    workers = [
        WakingWorker(
            bell,
            queue_names=["default"],
            interval=interval,
            batch=False,
            backend_name=backend_name,
            startup_delay=False,
            max_tasks=None,
            worker_id=f"{host}:{os.getpid()}:{n}",
            excluded_queue_names=[],
        )
        for n in range(threads)
    ]
    threading.Thread(target=listen, args=(bell,), name="tandem-wake", daemon=True).start()
    for n, worker in enumerate(workers):
        threading.Thread(target=worker.run, name=f"tandem-worker-{n}", daemon=True).start()
    return workers


def stop(workers: list[WakingWorker]) -> None:
    """Claim nothing more; tasks already running go on until the process exits."""
    for worker in workers:
        worker.running = False
    if workers:
        workers[0].bell.stop()
