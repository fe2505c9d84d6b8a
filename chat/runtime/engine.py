"""The in-process runtime: turn runners, tool handles and the sweeper, on the server's loop.

Everything here runs on one event loop, the ASGI server's, bound on the first request or
socket. Other threads reach it only through ``kick`` and friends, which hop onto the loop
with ``call_soon_threadsafe``. The in-memory channel layer is not thread-safe, which is why
publishing also happens on this loop (see ``chat.runtime.events``).

The engine is the bottom of the runtime: it never imports what it runs. ``ChatConfig.ready()``
hands it the turn runner, the tool task and the background loops with ``wire()`` at start-up,
the way Django hands signals their receivers.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import socket
import threading
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

INSTANCE_ID = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

_loop: asyncio.AbstractEventLoop | None = None
_bind_lock = threading.Lock()
_tasks: set[asyncio.Task[Any]] = set()
_runners: dict[int, asyncio.Task[Any]] = {}
_rekick: set[int] = set()
_replies: dict[int, asyncio.Task[Any]] = {}
_live: dict[int, LiveReply] = {}
_tools: dict[str, ToolHandle] = {}
# Conversations whose turn a database thread is beginning (``reserve``); guarded by the lock,
# which ``_kick`` takes too, so a runner and a reservation never both start one.
_reserved: set[int] = set()
_reserve_lock = threading.Lock()


@dataclass
class LiveReply:
    """The text of a reply streaming in this process, for tabs that join mid-stream."""

    conversation_id: int
    text: str = ""
    thinking: str = ""


@dataclass
class ToolHandle:
    cancel: Callable[[], None]
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Wiring:
    """What the engine runs, handed to it at start-up (see ``chat.apps.ChatConfig.ready``)."""

    run_turn: Callable[[int], Awaitable[None]]  # answer one conversation (the turn runner)
    enqueue_tool: Callable[[int], object]  # hand a queued tool pair to the task backend
    background: tuple[Callable[[], Coroutine[Any, Any, None]], ...] = ()  # loops, like the sweeper
    on_bind: tuple[Callable[[asyncio.AbstractEventLoop], None], ...] = ()  # told the server loop
    # Doorbells to other processes (chat.runtime.doorbells), set when several processes share
    # the work: ask a web process to run a turn when none runs here (a tool worker), and tell
    # every process to stop a tool call wherever it runs.
    remote_kick: Callable[[int], None] | None = None
    remote_cancel: Callable[[str], None] | None = None
    # Run a turn that a database hop began already (``reserve``/``adopt``): the turn runner.
    run_begun: Callable[[int, Any], Awaitable[None]] | None = None


_wiring: Wiring | None = None


def wire(wiring: Wiring) -> None:
    global _wiring
    _wiring = wiring


def wired() -> Wiring:
    if _wiring is None:
        raise RuntimeError("The runtime is not wired: chat.apps.ChatConfig.ready() calls wire().")
    return _wiring


def enqueue_tool(pair_id: int) -> None:
    """Start a queued tool pair through the task backend the app was wired with."""
    wired().enqueue_tool(pair_id)


def bind(loop: asyncio.AbstractEventLoop) -> None:
    """Adopt the server's loop (idempotent) and start the background loops on it."""
    global _loop
    with _bind_lock:
        if _loop is loop and not loop.is_closed():
            return
        _loop = loop
        _runners.clear()
        _replies.clear()
        _live.clear()
        _tools.clear()
    wiring = wired()
    for hook in wiring.on_bind:
        hook(loop)
    for loop_forever in wiring.background:
        spawn(loop_forever())


def spawn(coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
    """Start a task on the current loop and keep a strong reference until it ends."""
    # A fresh context: a task started from a worker thread's callback must not inherit
    # asgiref's marker for "inside the sync thread", or its own DB calls would refuse to run.
    task = asyncio.get_running_loop().create_task(coro, context=contextvars.Context())
    _tasks.add(task)
    task.add_done_callback(_finished)
    return task


def _finished(task: asyncio.Task[Any]) -> None:
    _tasks.discard(task)
    if not task.cancelled() and task.exception() is not None:
        logger.error("background task failed", exc_info=task.exception())


def call_on_loop(fn: Callable[..., Any], *args: Any) -> bool:
    """Run ``fn(*args)`` on the server's loop, now if we are on it, else soon; thread-safe.

    False when no server loop runs in this process (a management command, a sync test).
    The callback gets a fresh context: one inherited from asgiref's sync thread would make
    its tasks' own DB calls refuse to run.
    """
    loop = _loop
    if loop is None or loop.is_closed() or not loop.is_running():
        return False
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        fn(*args)
    else:
        loop.call_soon_threadsafe(fn, *args, context=contextvars.Context())
    return True


def kick(conversation_id: int) -> None:
    """Make sure a turn runner looks at this conversation soon. Safe from any thread.

    A process without a server loop (a tool worker) rings a web process instead; if that
    doorbell is lost, every web process's sweeper finds the conversation within a sweep.
    """
    if call_on_loop(_kick, conversation_id):
        return
    remote = _wiring.remote_kick if _wiring is not None else None
    if remote is not None:
        remote(conversation_id)


def _busy(conversation_id: int) -> bool:
    """A runner of this process answers the conversation, or a database thread is beginning
    its turn (``reserve``). Call holding ``_reserve_lock``."""
    running = _runners.get(conversation_id)
    return conversation_id in _reserved or (running is not None and not running.done())


def _kick(conversation_id: int) -> None:
    with _reserve_lock:
        if _busy(conversation_id):
            _rekick.add(conversation_id)  # the runner (or the reserved turn) runs again after
            return
        _runners[conversation_id] = spawn(_run(conversation_id, wired().run_turn))


def reserve(conversation_id: int) -> bool:
    """From a database thread: may the caller begin this conversation's turn right there, in
    the hop that stored what it answers (one hop fewer before the first token)? True when this
    process has a server loop and no runner of its own for the conversation; until ``adopt`` or
    ``release`` no runner starts for it here, and kicks meanwhile are kept for after."""
    loop = _loop
    if _wiring is None or _wiring.run_begun is None:
        return False
    if loop is None or loop.is_closed() or not loop.is_running():
        return False
    with _reserve_lock:
        if _busy(conversation_id):
            return False
        _reserved.add(conversation_id)
        return True


def adopt(conversation_id: int, begun: object) -> bool:
    """After ``reserve``: run the turn the caller began (``Wiring.run_begun``) as the
    conversation's runner; a kick that came meanwhile runs the turn runner once more after.
    False when the server loop is gone (the process stops): the caller lets go."""

    def start() -> None:
        with _reserve_lock:
            _reserved.discard(conversation_id)
            if _loop is None:
                return  # shut down meanwhile: recovery at the next start finds the reply
            run_begun = wired().run_begun
            assert run_begun is not None  # reserve() refused without it
            _runners[conversation_id] = spawn(
                _run(
                    conversation_id,
                    wired().run_turn,
                    first=lambda: run_begun(conversation_id, begun),
                )
            )

    try:
        return call_on_loop(start)
    except RuntimeError:  # the loop closed between the check and the call
        return False


def release(conversation_id: int) -> None:
    """After ``reserve``, when the caller did not begin the turn: let go, and kick as usual."""
    with _reserve_lock:
        _reserved.discard(conversation_id)
    kick(conversation_id)


async def _run(
    conversation_id: int,
    fn: Callable[[int], Awaitable[None]],
    *,
    first: Callable[[], Awaitable[None]] | None = None,
) -> None:
    try:
        if first is not None:
            await first()  # a kick that came while it was reserved is not discarded
            if conversation_id not in _rekick:
                return
        while True:
            _rekick.discard(conversation_id)
            await fn(conversation_id)
            if conversation_id not in _rekick:
                return
    finally:
        if _runners.get(conversation_id) is asyncio.current_task():
            del _runners[conversation_id]


def register_reply(message_id: int, conversation_id: int) -> LiveReply:
    task = asyncio.current_task()
    if task is not None:
        _replies[message_id] = task
    live = _live[message_id] = LiveReply(conversation_id)
    return live


def unregister_reply(message_id: int) -> None:
    _replies.pop(message_id, None)
    _live.pop(message_id, None)


def live_reply(message_id: int) -> LiveReply | None:
    return _live.get(message_id)


def stop_reply(message_id: int) -> None:
    """Cancel a reply streaming in this process (others notice the DB flag within a second)."""
    call_on_loop(_stop_reply, message_id)


def _stop_reply(message_id: int) -> None:
    task = _replies.get(message_id)
    if task is not None and not task.done():
        task.cancel()


def register_tool(tool_use_id: str, handle: ToolHandle) -> None:
    _tools[tool_use_id] = handle


def unregister_tool(tool_use_id: str) -> None:
    _tools.pop(tool_use_id, None)


def cancel_tool(tool_use_id: str) -> None:
    """Stop a tool call running here, and ring the other processes (it may run on a worker)."""
    call_on_loop(_cancel_tool, tool_use_id)
    remote = _wiring.remote_cancel if _wiring is not None else None
    if remote is not None:
        remote(tool_use_id)


def cancel_tool_here(tool_use_id: str) -> None:
    """Stop a tool call if it runs in this process; thread-safe (a tool's cancel is)."""
    _cancel_tool(tool_use_id)


def _cancel_tool(tool_use_id: str) -> None:
    handle = _tools.get(tool_use_id)
    if handle is not None:
        handle.cancel()


def running_tools() -> list[str]:
    return list(_tools)


async def idle() -> None:
    """Wait until no turn runner and no tool is active in this process (for tests and shutdown)."""
    while any(not t.done() for t in _runners.values()) or _tools:  # noqa: ASYNC110 - test helper
        await asyncio.sleep(0.01)


async def shutdown() -> None:
    """Cancel everything this engine started on the current loop (tests, server stop)."""
    global _loop
    tasks = [t for t in _tasks if not t.done()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    _loop = None
    _runners.clear()
    _replies.clear()
    _live.clear()
    _tools.clear()
    _reserved.clear()


class EngineMiddleware:
    """ASGI middleware that binds the engine to the server's loop on first use."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        loop = asyncio.get_running_loop()
        if _loop is not loop:
            bind(loop)
        await self.app(scope, receive, send)
