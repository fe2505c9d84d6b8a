"""The embedded Django Tasks backend: tasks run inside the server process, nothing else to deploy.

`enqueue()` never blocks. Async task functions run on an event loop, sync ones in the bounded
thread pool shared with sync tools (`tools.execution.get_executor`). The loop is chosen so:

1. the loop bound with `bind_loop()`, i.e. the ASGI server's loop, bound at startup: via
   `loop.create_task` when enqueuing from that loop's thread, else `run_coroutine_threadsafe`;
2. else the loop running in the calling thread (beware short-lived loops such as `asyncio.run`
   or `async_to_sync`: their unfinished tasks are cancelled when they close);
3. else a private loop in a daemon thread, started on first use (shell, management commands).
   Being a daemon, it dies with the process and its unfinished tasks with it.

Results are kept in memory, at most OPTIONS["max_results"] (default 1000; running tasks are never
evicted), and are lost on restart: durable state belongs to the caller's own rows.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Coroutine
from inspect import iscoroutinefunction
from traceback import format_exception
from typing import Any

from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.db import close_old_connections
from django.tasks.backends.base import BaseTaskBackend
from django.tasks.base import Task, TaskContext, TaskError, TaskResult, TaskResultStatus
from django.tasks.exceptions import TaskResultDoesNotExist
from django.tasks.signals import task_enqueued, task_finished, task_started
from django.utils import timezone
from django.utils.crypto import get_random_string
from django.utils.json import normalize_json

from tools.execution import get_executor, max_threads

logger = logging.getLogger(__name__)

DEFAULT_MAX_RESULTS = 1000
WORKER_ID = f"inprocess-{os.getpid()}-{get_random_string(8)}"

_lock = threading.Lock()
# Shared by every backend instance: Django creates one instance per thread (asgiref Local).
_results: OrderedDict[str, TaskResult[Any, Any]] = OrderedDict()
_in_flight: set[asyncio.Task[None] | concurrent.futures.Future[None]] = set()
_bound_loop: asyncio.AbstractEventLoop | None = None
_fallback_loop: asyncio.AbstractEventLoop | None = None


def bind_loop(loop: asyncio.AbstractEventLoop | None) -> None:
    """Make `loop` (the server's) run every async task; None unbinds."""
    global _bound_loop
    _bound_loop = loop


def get_bound_loop() -> asyncio.AbstractEventLoop | None:
    """The bound loop, or None if none is bound or it has been closed."""
    loop = _bound_loop
    return loop if loop is not None and not loop.is_closed() else None


def in_flight() -> int:
    """How many tasks are scheduled or running right now."""
    with _lock:
        return len(_in_flight)


class InProcessBackend(BaseTaskBackend):
    supports_async_task = True
    supports_get_result = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        self.max_results = int(self.options.get("max_results", DEFAULT_MAX_RESULTS))

    def enqueue(
        self, task: Task[Any, Any], args: Any, kwargs: dict[str, Any]
    ) -> TaskResult[Any, Any]:
        self.validate_task(task)
        result: TaskResult[Any, Any] = TaskResult(
            task=task,
            id=get_random_string(32),
            status=TaskResultStatus.READY,
            enqueued_at=timezone.now(),
            started_at=None,
            finished_at=None,
            last_attempted_at=None,
            args=list(args),
            kwargs=dict(kwargs),
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        self._store(result)
        task_enqueued.send(type(self), task_result=result)
        try:
            if iscoroutinefunction(task.func):
                _submit_coroutine(_run_async(self, result))
            else:
                # A fresh context, so nothing one job sets leaks into the next in that thread.
                _track(get_executor().submit(contextvars.Context().run, _run_sync, self, result))
        except BaseException:
            with _lock:
                _results.pop(result.id, None)
            raise
        return result

    async def aenqueue(
        self, task: Task[Any, Any], args: Any, kwargs: dict[str, Any]
    ) -> TaskResult[Any, Any]:
        # enqueue() never blocks: no sync_to_async thread hop (which the base class would add).
        return self.enqueue(task, args, kwargs)

    def get_result(self, result_id: str) -> TaskResult[Any, Any]:
        with _lock:
            try:
                return _results[result_id]
            except KeyError:
                raise TaskResultDoesNotExist(result_id) from None

    async def aget_result(self, result_id: str) -> TaskResult[Any, Any]:
        return self.get_result(result_id)

    def check(self, **kwargs: Any) -> list[Any]:
        errors = list(super().check(**kwargs))
        try:
            max_threads()
        except ImproperlyConfigured as exc:
            errors.append(checks.Error(str(exc), id="tools.E001"))
        return errors

    def _store(self, result: TaskResult[Any, Any]) -> None:
        with _lock:
            _results[result.id] = result
            excess = len(_results) - self.max_results
            if excess > 0:
                finished = [key for key, kept in _results.items() if kept.is_finished]
                for key in finished[:excess]:
                    del _results[key]


# Running a task --------------------------------------------------------------------------------


async def _run_async(backend: InProcessBackend, result: TaskResult[Any, Any]) -> None:
    _started(backend, result)
    try:
        if result.task.takes_context:
            value = await result.task.func(
                TaskContext(task_result=result), *result.args, **result.kwargs
            )
        else:
            value = await result.task.func(*result.args, **result.kwargs)
        _succeeded(backend, result, value)
    except asyncio.CancelledError as exc:  # the loop is shutting down
        _failed(backend, result, exc)
        raise
    except Exception as exc:
        _failed(backend, result, exc)


def _run_sync(backend: InProcessBackend, result: TaskResult[Any, Any]) -> None:
    close_old_connections()
    _started(backend, result)
    try:
        if result.task.takes_context:
            value = result.task.func(TaskContext(task_result=result), *result.args, **result.kwargs)
        else:
            value = result.task.func(*result.args, **result.kwargs)
        _succeeded(backend, result, value)
    except BaseException as exc:  # SystemExit too: a pool thread must never lose a result
        _failed(backend, result, exc)
    finally:
        close_old_connections()


def _started(backend: InProcessBackend, result: TaskResult[Any, Any]) -> None:
    now = timezone.now()
    object.__setattr__(result, "status", TaskResultStatus.RUNNING)
    object.__setattr__(result, "started_at", now)
    object.__setattr__(result, "last_attempted_at", now)
    result.worker_ids.append(WORKER_ID)
    task_started.send(type(backend), task_result=result)


def _succeeded(backend: InProcessBackend, result: TaskResult[Any, Any], value: Any) -> None:
    object.__setattr__(result, "_return_value", normalize_json(value))  # may raise TypeError
    object.__setattr__(result, "finished_at", timezone.now())
    object.__setattr__(result, "status", TaskResultStatus.SUCCESSFUL)
    task_finished.send(type(backend), task_result=result)


def _failed(backend: InProcessBackend, result: TaskResult[Any, Any], exc: BaseException) -> None:
    """Record the failure. Called inside the `except` block, so django.tasks logs the traceback."""
    exc_type = type(exc)
    result.errors.append(
        TaskError(
            exception_class_path=f"{exc_type.__module__}.{exc_type.__qualname__}",
            traceback="".join(format_exception(exc)),
        )
    )
    object.__setattr__(result, "finished_at", timezone.now())
    object.__setattr__(result, "status", TaskResultStatus.FAILED)
    task_finished.send(type(backend), task_result=result)


# Scheduling ------------------------------------------------------------------------------------


def _submit_coroutine(coro: Coroutine[Any, Any, None]) -> None:
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    loop = get_bound_loop() or running or _ensure_fallback_loop()
    # Tasks start from a fresh context: one inherited from a worker thread (an on_commit
    # callback in asgiref's sync thread) would make the task's own DB calls refuse to run.
    try:
        if loop is running:
            _track(loop.create_task(coro, context=contextvars.Context()))
        else:
            _track(contextvars.Context().run(asyncio.run_coroutine_threadsafe, coro, loop))
    except BaseException:
        coro.close()  # never started: avoid "coroutine was never awaited"
        raise


def _track(handle: asyncio.Task[None] | concurrent.futures.Future[None]) -> None:
    # The event loop only keeps weak references to tasks: hold them until they are done.
    with _lock:
        _in_flight.add(handle)
    handle.add_done_callback(_untrack)


def _untrack(handle: asyncio.Task[None] | concurrent.futures.Future[None]) -> None:
    with _lock:
        _in_flight.discard(handle)


def _ensure_fallback_loop() -> asyncio.AbstractEventLoop:
    global _fallback_loop
    with _lock:
        if _fallback_loop is None or _fallback_loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="tandem-tasks", daemon=True)
            thread.start()
            _fallback_loop = loop
            logger.info("No event loop bound for async tasks: started a private one")
        return _fallback_loop
