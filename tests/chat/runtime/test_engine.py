"""chat.runtime.engine: it runs what it was handed at start-up and imports nothing above it."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from chat.runtime import engine, runner, sweeper, tasks
from tools import task_backend

ENGINE = Path(engine.__file__)


@pytest.fixture
def rewired() -> Iterator[list[tuple[str, object]]]:
    """Wire the engine with recording callables; the app's wiring comes back afterwards."""
    calls: list[tuple[str, object]] = []
    before = engine.wired()

    async def run_turn(conversation_id: int) -> None:
        calls.append(("turn", conversation_id))

    async def loop_forever() -> None:
        calls.append(("background", None))

    async def run_begun(conversation_id: int, begun: object) -> None:
        calls.append(("begun", (conversation_id, begun)))

    engine.wire(
        engine.Wiring(
            run_turn=run_turn,
            enqueue_tool=lambda pair_id: calls.append(("tool", pair_id)),
            background=(loop_forever,),
            on_bind=(lambda loop: calls.append(("bound", loop)),),
            run_begun=run_begun,
        )
    )
    yield calls
    engine.wire(before)


def test_the_app_wires_the_runner_the_tool_task_and_the_sweeper() -> None:
    wiring = engine.wired()
    assert wiring.run_turn is runner.run_conversation
    assert wiring.run_begun is runner.run_begun
    assert wiring.enqueue_tool == tasks.run_tool_pair.enqueue
    assert wiring.background == (sweeper.run_forever,)
    assert wiring.on_bind == (task_backend.bind_loop,)


def test_it_imports_nothing_of_chat_not_even_inside_a_function() -> None:
    imported = [
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(ast.parse(ENGINE.read_text()))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    assert [name for name in imported if name and name.startswith(("chat", "tools"))] == []


def test_it_refuses_to_run_unwired(rewired: list[tuple[str, object]]) -> None:
    engine._wiring = None
    with pytest.raises(RuntimeError, match="not wired"):
        engine.enqueue_tool(1)


def test_it_hands_a_queued_pair_to_the_wired_task(rewired: list[tuple[str, object]]) -> None:
    engine.enqueue_tool(7)
    assert rewired == [("tool", 7)]


async def test_it_binds_then_runs_the_wired_turn_runner(
    rewired: list[tuple[str, object]],
) -> None:
    loop = asyncio.get_running_loop()
    engine.bind(loop)
    try:
        engine.kick(12)
        await asyncio.sleep(0)
        await engine.idle()
    finally:
        await engine.shutdown()
    assert ("bound", loop) in rewired and ("background", None) in rewired
    assert ("turn", 12) in rewired


async def test_a_reserved_turn_is_adopted_and_a_kick_meanwhile_runs_after_it(
    rewired: list[tuple[str, object]],
) -> None:
    """A database thread begins a turn itself (``reserve``, then ``adopt``): while it holds
    the reservation no runner starts, and a kick that came meanwhile runs the turn runner
    once more after the adopted turn, not beside it."""
    engine.bind(asyncio.get_running_loop())
    try:
        assert await asyncio.to_thread(engine.reserve, 5)
        assert not await asyncio.to_thread(engine.reserve, 5)  # one at a time
        engine.kick(5)  # e.g. a tool result, while the thread begins the turn
        await asyncio.sleep(0.01)
        assert [c for c in rewired if c[0] in ("turn", "begun")] == []
        await asyncio.to_thread(engine.adopt, 5, "the begun turn")
        await asyncio.sleep(0.01)
        await engine.idle()
    finally:
        await engine.shutdown()
    assert [c for c in rewired if c[0] in ("turn", "begun")] == [
        ("begun", (5, "the begun turn")),
        ("turn", 5),
    ]


async def test_it_reserves_nothing_while_its_own_runner_runs(
    rewired: list[tuple[str, object]],
) -> None:
    engine.bind(asyncio.get_running_loop())
    release = asyncio.Event()
    turns_run: list[int] = []

    async def slow_turn(conversation_id: int) -> None:
        turns_run.append(conversation_id)
        await release.wait()

    engine.wire(dataclasses.replace(engine.wired(), run_turn=slow_turn))
    try:
        engine.kick(6)
        await asyncio.sleep(0)
        assert not await asyncio.to_thread(engine.reserve, 6)
        release.set()
        await engine.idle()
        assert await asyncio.to_thread(engine.reserve, 6)  # the runner ended
        await asyncio.to_thread(engine.release, 6)  # gave up: it kicks the runner instead
        await asyncio.sleep(0.01)
        await engine.idle()
        assert turns_run == [6, 6] and not engine._reserved
    finally:
        await engine.shutdown()


def test_it_reserves_nothing_without_a_server_loop(rewired: list[tuple[str, object]]) -> None:
    assert not engine.reserve(7)  # a management command, a sync test: the kick path
