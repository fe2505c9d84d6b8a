from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time

import pytest
from asgiref.sync import sync_to_async
from django.tasks import TaskResultStatus, default_task_backend, task, task_backends
from django.tasks.exceptions import TaskResultDoesNotExist

from tests.tools.loop_watch import watching_the_loop
from tools import task_backend
from tools.task_backend import InProcessBackend, bind_loop, get_bound_loop

marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="fresh")


@task
async def where_async(label: str) -> dict[str, object]:
    await asyncio.sleep(0.01)
    return {"label": label, "thread": threading.current_thread().name}


@task
def where_sync(label: str) -> dict[str, object]:
    return {"label": label, "thread": threading.current_thread().name}


@task
def naps(seconds: float) -> str:
    time.sleep(seconds)
    return "rested"


@task
async def explodes() -> None:
    raise ValueError("boom")


@task
def returns_a_set() -> set[int]:
    return {1}


@task
async def uses_the_orm_thread() -> str:
    return await sync_to_async(lambda: "from the sync thread")()


@task
def reads_the_marker() -> str:
    return marker.get()


@task(takes_context=True)
def counts_attempts(context) -> int:
    return context.attempt


@pytest.fixture(autouse=True)
def unbound():
    bind_loop(None)
    yield
    bind_loop(None)


async def eventually(condition, within=2.0):
    async with asyncio.timeout(within):
        while not condition():  # noqa: ASYNC110 - results change in other threads: poll them
            await asyncio.sleep(0.005)


async def finished(result):
    await eventually(lambda: result.is_finished)
    return result


def finished_sync(result, timeout=2.0):
    deadline = time.monotonic() + timeout
    while not result.is_finished and time.monotonic() < deadline:
        time.sleep(0.005)
    return result


def test_it_is_the_configured_backend():
    assert isinstance(task_backends["default"], InProcessBackend)
    assert default_task_backend.supports_async_task
    assert default_task_backend.supports_get_result


async def test_it_runs_an_async_task_on_the_running_loop():
    result = where_async.enqueue("a")
    assert result.status == TaskResultStatus.READY
    assert result.enqueued_at is not None
    await finished(result)
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == {"label": "a", "thread": threading.current_thread().name}
    assert result.started_at <= result.finished_at
    assert result.attempts == 1


async def test_it_runs_a_sync_task_in_the_pool():
    result = await finished(where_sync.enqueue("s"))
    assert result.return_value["thread"].startswith("tandem-tool")


async def test_it_runs_tasks_from_another_thread_on_the_bound_loop():
    bind_loop(asyncio.get_running_loop())
    result = await asyncio.to_thread(where_async.enqueue, "t")
    await finished(result)
    assert result.return_value["thread"] == threading.current_thread().name


async def test_it_runs_sync_tasks_enqueued_from_another_thread():
    bind_loop(asyncio.get_running_loop())
    result = await finished(await asyncio.to_thread(where_sync.enqueue, "t"))
    assert result.return_value["thread"].startswith("tandem-tool")


def test_it_starts_its_own_loop_when_there_is_none():
    result = finished_sync(where_async.enqueue("nobody"))
    assert result.return_value["thread"] == "tandem-tasks"


async def test_it_runs_tasks_enqueued_from_the_orm_thread():
    # e.g. transaction.on_commit(...) inside database_sync_to_async: the task must not inherit
    # asgiref's "inside the sync thread" marker, or its own sync_to_async calls would refuse.
    bind_loop(asyncio.get_running_loop())
    result = await finished(await sync_to_async(uses_the_orm_thread.enqueue)())
    assert result.return_value == "from the sync thread"


async def test_it_runs_each_task_in_a_fresh_context():
    marker.set("caller")
    results = [reads_the_marker.enqueue(), await reads_the_marker.aenqueue()]
    assert [(await finished(result)).return_value for result in results] == ["fresh", "fresh"]


async def test_it_enqueues_asynchronously_without_suspending():
    coroutine = where_async.aenqueue("direct")
    with pytest.raises(StopIteration) as done:
        coroutine.send(None)  # completes in one step: no thread hop
    result = await finished(done.value.value)
    assert result.return_value["label"] == "direct"


async def test_it_records_a_failure_and_logs_it(caplog):
    with caplog.at_level(logging.ERROR, logger="django.tasks"):
        result = await finished(explodes.enqueue())
    assert result.status == TaskResultStatus.FAILED
    [error] = result.errors
    assert error.exception_class is ValueError
    assert "boom" in error.traceback
    assert any(record.exc_info for record in caplog.records)


async def test_it_fails_a_task_whose_result_is_not_json():
    result = await finished(returns_a_set.enqueue())
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class is TypeError


async def test_it_passes_the_task_context():
    assert (await finished(counts_attempts.enqueue())).return_value == 1


async def test_it_finds_results_by_id():
    result = await finished(where_sync.enqueue("r"))
    assert where_sync.get_result(result.id) is result
    assert await where_sync.aget_result(result.id) is result
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result("nope")


async def test_it_keeps_a_bounded_number_of_finished_results():
    backend = InProcessBackend("default", {"OPTIONS": {"max_results": 3}})
    old = [await finished(backend.enqueue(where_sync, ["old"], {})) for _ in range(5)]
    newest = backend.enqueue(naps, [0.05], {})
    with pytest.raises(TaskResultDoesNotExist):
        backend.get_result(old[0].id)
    assert backend.get_result(old[-1].id) is old[-1]
    assert backend.get_result(newest.id) is newest
    await finished(newest)


async def test_it_keeps_the_loop_responsive_while_sync_tasks_block():
    async with watching_the_loop() as watch:
        results = [naps.enqueue(0.5) for _ in range(20)]
        for result in results:
            await finished(result)
    assert {result.return_value for result in results} == {"rested"}
    assert watch.elapsed < 1.5
    assert watch.longest_gap < 0.15


async def test_it_holds_running_tasks_until_they_finish():
    result = naps.enqueue(0.05)
    assert task_backend.in_flight() >= 1
    await finished(result)
    await eventually(lambda: task_backend.in_flight() == 0)


async def test_it_forgets_a_closed_bound_loop():
    loop = asyncio.new_event_loop()
    bind_loop(loop)
    assert get_bound_loop() is loop
    loop.close()
    assert get_bound_loop() is None
