"""tools.db_worker: django-tasks-db's worker in threads, woken by a bell instead of a poll."""

from __future__ import annotations

import threading
import time

import pytest
from django.tasks import task
from django.test import override_settings

from tools import db_worker
from tools.db_backend import DatabaseBackend

DB_TASKS = {"default": {"BACKEND": "tools.db_backend.DatabaseBackend"}}
ran: list[int] = []


@task
def remember(number: int) -> int:
    ran.append(number)
    return number


def test_a_rung_bell_wakes_a_waiting_thread_at_once() -> None:
    bell = db_worker.Bell()
    woke: list[float] = []

    def wait() -> None:
        started = time.monotonic()
        bell.wait(bell.rings, timeout=10)
        woke.append(time.monotonic() - started)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.05)
    bell.ring()
    waiter.join(timeout=5)
    assert woke and woke[0] < 1


def test_a_bell_rung_before_the_wait_is_not_missed() -> None:
    bell = db_worker.Bell()
    seen = bell.rings  # read before looking for work
    bell.ring()  # a task arrives while we look
    started = time.monotonic()
    bell.wait(seen, timeout=10)
    assert time.monotonic() - started < 1


@pytest.mark.django_db(transaction=True)
def test_a_worker_claims_and_runs_a_task_of_the_database_backend() -> None:
    with override_settings(TASKS=DB_TASKS):
        from django.tasks import task_backends

        task_backends._settings = None  # type: ignore[attr-defined]
        backend = task_backends["default"]
        assert isinstance(backend, DatabaseBackend)
        result = remember.enqueue(41)
        worker = db_worker.WakingWorker(
            db_worker.Bell(),
            queue_names=["default"],
            interval=0.1,
            batch=False,
            backend_name="default",
            startup_delay=False,
            max_tasks=None,
            worker_id="test:1:0",
            excluded_queue_names=[],
        )
        claimed = worker.claim_one()
        assert claimed is not None and str(claimed.id) == str(result.id)
        assert worker.claim_one() is None  # claimed once: nobody else runs it
        worker.run_task(claimed)
        assert ran[-1] == 41
        assert backend.get_result(result.id).return_value == 41
