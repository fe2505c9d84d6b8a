"""Running one tool call: validate the input, run the tool without blocking the event loop, bound
its time, honour cancellation, and turn whatever happens into a `tool_result`.

Async tools run as a task on the running loop; sync tools run in one bounded thread pool shared
with the task backend. `execute()` never raises, except `CancelledError` when its own caller is
cancelled (the caller then decides what the result is).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import close_old_connections
from pydantic import BaseModel

from tools.context import ToolContext
from tools.errors import ToolCancelled, ToolError, ToolInputError
from tools.registry import ToolSpec

logger = logging.getLogger(__name__)

DEFAULT_MAX_THREADS = 32

OutcomeStatus = Literal["succeeded", "failed", "timed_out", "cancelled"]


@dataclass(frozen=True)
class ToolOutcome:
    status: OutcomeStatus
    content: str | list[dict[str, Any]]
    is_error: bool


async def execute(
    spec: ToolSpec, raw_input: object, ctx: ToolContext, *, timeout_s: float
) -> ToolOutcome:
    """Run one tool call to an outcome. Cancel it from anywhere with `ctx.cancel()`."""
    try:
        kwargs = spec.validate_input(raw_input)
    except ToolInputError as exc:
        return ToolOutcome("failed", exc.message, is_error=True)
    if ctx.cancelled:
        return _cancelled(spec)
    if spec.context_param is not None:
        kwargs[spec.context_param] = ctx

    runner = _start(spec, kwargs)
    stop = asyncio.ensure_future(ctx.wait_cancelled())
    try:
        async with asyncio.timeout(timeout_s):
            await asyncio.wait({runner, stop}, return_when=asyncio.FIRST_COMPLETED)
    except TimeoutError:
        # Only our deadline can raise here: the tool's own exceptions stay inside `runner`.
        _abandon(runner, ctx)
        return ToolOutcome(
            "timed_out",
            f"Tool {spec.name} timed out after {timeout_s:g} s and was stopped.",
            is_error=True,
        )
    except asyncio.CancelledError:
        _abandon(runner, ctx)
        raise
    finally:
        stop.cancel()
    if not runner.done():  # ctx.cancel() was called while the tool was still running
        _abandon(runner, ctx)
        return _cancelled(spec)
    return _outcome(spec, runner)


def _start(spec: ToolSpec, kwargs: dict[str, Any]) -> asyncio.Future[Any]:
    loop = asyncio.get_running_loop()
    if spec.is_async:
        return loop.create_task(spec.func(**kwargs), name=f"tool {spec.name}")
    call = functools.partial(contextvars.copy_context().run, _call_sync, spec.func, kwargs)
    return loop.run_in_executor(get_executor(), call)


def _call_sync(func: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    # Pool threads live long: drop database connections that are broken or past CONN_MAX_AGE,
    # as Django does around each request.
    close_old_connections()
    try:
        return func(**kwargs)
    finally:
        close_old_connections()


# Abandoned runners are kept alive until they finish, so the loop does not garbage-collect a
# task mid-cleanup, and their exceptions are consumed rather than logged as "never retrieved".
_abandoned: set[asyncio.Future[Any]] = set()


def _abandon(runner: asyncio.Future[Any], ctx: ToolContext) -> None:
    ctx.cancel()  # a sync tool in its thread can only stop by noticing this
    if runner.done():
        _consume(runner)
        return
    runner.cancel()
    _abandoned.add(runner)
    runner.add_done_callback(_consume)


def _consume(runner: asyncio.Future[Any]) -> None:
    _abandoned.discard(runner)
    if not runner.cancelled():
        runner.exception()


def _outcome(spec: ToolSpec, runner: asyncio.Future[Any]) -> ToolOutcome:
    if runner.cancelled():
        return _cancelled(spec)
    exc = runner.exception()
    if exc is None:
        return _coerce(spec, runner.result())
    if isinstance(exc, ToolCancelled):
        return _cancelled(spec)
    if isinstance(exc, ToolError):
        return ToolOutcome("failed", exc.message or f"Tool {spec.name} failed.", is_error=True)
    logger.exception("Tool %s raised an unexpected error", spec.name, exc_info=exc)
    return ToolOutcome(
        "failed",
        f"Tool {spec.name} failed with an unexpected error ({type(exc).__name__}).",
        is_error=True,
    )


def _coerce(spec: ToolSpec, value: Any) -> ToolOutcome:
    if isinstance(value, str):
        return ToolOutcome("succeeded", value, is_error=False)
    if isinstance(value, BaseModel):
        return ToolOutcome("succeeded", value.model_dump_json(), is_error=False)
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return ToolOutcome(
            "failed",
            f"Tool {spec.name} returned a value that is not JSON-serialisable "
            f"(type {type(value).__name__}).",
            is_error=True,
        )
    return ToolOutcome("succeeded", text, is_error=False)


def _cancelled(spec: ToolSpec) -> ToolOutcome:
    return ToolOutcome("cancelled", f"Tool {spec.name} was cancelled before it finished.", True)


# The thread pool -----------------------------------------------------------------------------

_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def get_executor() -> ThreadPoolExecutor:
    """The process-wide pool for sync tools and sync tasks, created on first use.

    Its size is settings.TASKS["default"]["OPTIONS"]["max_threads"] (32 if unset). Work that waits
    on another job of the same pool can deadlock it: run such work as async code instead.
    """
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(
                max_workers=max_threads(), thread_name_prefix="tandem-tool"
            )
        return _executor


def max_threads() -> int:
    if not settings.configured:
        return DEFAULT_MAX_THREADS
    tasks = getattr(settings, "TASKS", {})
    value = tasks.get("default", {}).get("OPTIONS", {}).get("max_threads", DEFAULT_MAX_THREADS)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ImproperlyConfigured(
            f'TASKS["default"]["OPTIONS"]["max_threads"] must be a positive integer, not {value!r}.'
        )
    return value
