"""chat.runtime.doorbells: a kick wakes one web process's runner; a cancel reaches every process.

On the in-memory channel layer (one process plays both sides); the cluster tests ring them
between real processes through Redis.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from chat.runtime import doorbells, engine


@pytest.fixture
def kicked() -> Iterator[list[int]]:
    """Wire a recording turn runner; the app's wiring comes back afterwards."""
    calls: list[int] = []
    before = engine.wired()

    async def run_turn(conversation_id: int) -> None:
        calls.append(conversation_id)

    engine.wire(engine.Wiring(run_turn=run_turn, enqueue_tool=lambda pair_id: None))
    yield calls
    engine.wire(before)


async def eventually(ready: object, within: float = 3.0) -> None:
    async with asyncio.timeout(within):
        while not ready():  # type: ignore[operator]  # noqa: ASYNC110 - polls a test probe
            await asyncio.sleep(0.01)


async def test_a_kick_rung_here_runs_the_turn_in_the_listening_process(kicked: list[int]) -> None:
    engine.bind(asyncio.get_running_loop())
    listener = engine.spawn(doorbells.listen_for_kicks())
    try:
        doorbells.ring_kick(12)
        await eventually(lambda: kicked == [12])
    finally:
        listener.cancel()
        await engine.shutdown()


async def test_a_cancel_rung_anywhere_stops_the_tool_where_it_runs(kicked: list[int]) -> None:
    engine.bind(asyncio.get_running_loop())
    stopped: list[str] = []
    engine.register_tool("toolu_here", engine.ToolHandle(cancel=lambda: stopped.append("here")))
    listener = engine.spawn(doorbells.listen_for_cancels())
    try:
        await asyncio.sleep(0.05)  # joined the group
        doorbells.ring_cancel("toolu_here")
        doorbells.ring_cancel("toolu_elsewhere")  # not running here: nothing happens
        await eventually(lambda: stopped == ["here"])
    finally:
        listener.cancel()
        engine.unregister_tool("toolu_here")
        await engine.shutdown()


def test_a_process_without_a_server_loop_kicks_through_the_doorbell(kicked: list[int]) -> None:
    rung: list[int] = []
    before = engine.wired()
    engine.wire(
        engine.Wiring(
            run_turn=before.run_turn, enqueue_tool=lambda p: None, remote_kick=rung.append
        )
    )
    try:
        engine.kick(7)  # no loop bound: a tool worker
    finally:
        engine.wire(before)
    assert rung == [7]


def test_a_cancel_also_rings_the_other_processes(kicked: list[int]) -> None:
    rung: list[str] = []
    before = engine.wired()
    engine.wire(
        engine.Wiring(
            run_turn=before.run_turn, enqueue_tool=lambda p: None, remote_cancel=rung.append
        )
    )
    try:
        engine.cancel_tool("toolu_1")
    finally:
        engine.wire(before)
    assert rung == ["toolu_1"]
