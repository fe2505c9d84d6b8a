"""The tool workers' Django Tasks backend: django-tasks-db, plus a wake-up for idle workers.

django-tasks-db keeps each task as a row; its workers claim rows with ``SELECT ... FOR UPDATE
SKIP LOCKED`` and poll for new ones. On PostgreSQL an enqueue also sends ``NOTIFY`` on
``WAKE_CHANNEL`` (delivered when the enqueuing transaction commits), which
``tools.db_worker`` listens for, so a tool starts a few milliseconds after it is enqueued
instead of up to a poll interval later. The poll stays as the fallback.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.db import connections, router
from django_tasks_db.backend import DatabaseBackend as _DatabaseBackend

WAKE_CHANNEL = "tandem_tools"


class DatabaseBackend(_DatabaseBackend):
    def enqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        result: Any = super().enqueue(task, args, kwargs)
        wake_workers()
        return result

    async def aenqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        result: Any = await super().aenqueue(task, args, kwargs)
        await sync_to_async(wake_workers)()
        return result


def wake_workers() -> None:
    """Ring idle workers (PostgreSQL only; elsewhere they find the task at their next poll)."""
    from django_tasks_db.models import DBTaskResult

    connection = connections[router.db_for_write(DBTaskResult)]
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, '')", [WAKE_CHANNEL])
