"""chat.runtime.engine: it runs what it was handed at start-up and imports nothing above it."""

from __future__ import annotations

import ast
import asyncio
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

    engine.wire(
        engine.Wiring(
            run_turn=run_turn,
            enqueue_tool=lambda pair_id: calls.append(("tool", pair_id)),
            background=(loop_forever,),
            on_bind=(lambda loop: calls.append(("bound", loop)),),
        )
    )
    yield calls
    engine.wire(before)


def test_the_app_wires_the_runner_the_tool_task_and_the_sweeper() -> None:
    wiring = engine.wired()
    assert wiring.run_turn is runner.run_conversation
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
