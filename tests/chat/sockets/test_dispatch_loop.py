"""chat.sockets.dispatch_loop: both inboxes, handled one message at a time, until one raises."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.exceptions import StopConsumer

from chat.sockets import dispatch_loop


class Inbox:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.reads = 0
        self.cancelled = False

    async def receive(self) -> dict[str, Any]:
        self.reads += 1
        try:
            return await self.queue.get()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


async def test_it_handles_one_message_at_a_time_from_both_inboxes() -> None:
    browser, layer = Inbox(), Inbox()
    running, log = 0, []

    async def dispatch(message: dict[str, Any]) -> None:
        nonlocal running
        running += 1
        assert running == 1, "two handlers ran at once"
        await asyncio.sleep(0.001)
        log.append(message["type"])
        running -= 1
        if message["type"] == "websocket.disconnect":
            raise StopConsumer

    for n in range(5):
        layer.queue.put_nowait({"type": f"reply.markdown.{n}"})
        browser.queue.put_nowait({"type": f"websocket.receive.{n}"})
    loop = asyncio.ensure_future(dispatch_loop.run([browser.receive, layer.receive], dispatch))
    await asyncio.sleep(0.05)
    browser.queue.put_nowait({"type": "websocket.disconnect"})
    with pytest.raises(StopConsumer):
        await asyncio.wait_for(loop, 2)
    assert sorted(log[:-1]) == sorted(
        [f"reply.markdown.{n}" for n in range(5)] + [f"websocket.receive.{n}" for n in range(5)]
    )
    assert [t for t in log if t.startswith("reply")] == [f"reply.markdown.{n}" for n in range(5)]
    assert log[-1] == "websocket.disconnect"
    assert layer.cancelled  # the other inbox's receive does not outlive the socket


async def test_an_inbox_is_not_read_again_until_its_message_is_handled() -> None:
    browser, layer = Inbox(), Inbox()
    release = asyncio.Event()

    async def dispatch(message: dict[str, Any]) -> None:
        await release.wait()

    for _ in range(3):
        layer.queue.put_nowait({"type": "reply.markdown"})
    loop = asyncio.ensure_future(dispatch_loop.run([browser.receive, layer.receive], dispatch))
    await asyncio.sleep(0.01)
    assert layer.reads == 1 and layer.queue.qsize() == 2  # the rest wait in the layer
    release.set()
    await asyncio.sleep(0.01)
    assert layer.reads == 4 and layer.queue.empty()
    loop.cancel()
    await asyncio.gather(loop, return_exceptions=True)
    assert browser.cancelled and layer.cancelled


async def test_a_handlers_error_ends_the_loop_with_that_error() -> None:
    browser, layer = Inbox(), Inbox()

    async def dispatch(message: dict[str, Any]) -> None:
        raise ValueError(message["type"])

    layer.queue.put_nowait({"type": "no_such_handler"})
    with pytest.raises(ValueError, match="no_such_handler"):
        await asyncio.wait_for(dispatch_loop.run([browser.receive, layer.receive], dispatch), 2)
    assert browser.cancelled


async def test_a_failing_receive_waits_for_the_running_handler_to_finish() -> None:
    browser = Inbox()
    release, finished = asyncio.Event(), []

    async def dispatch(message: dict[str, Any]) -> None:
        await release.wait()
        finished.append(message["type"])

    async def broken() -> dict[str, Any]:
        await asyncio.sleep(0.01)
        raise RuntimeError("the layer failed")

    browser.queue.put_nowait({"type": "websocket.receive"})
    loop = asyncio.ensure_future(dispatch_loop.run([browser.receive, broken], dispatch))
    await asyncio.sleep(0.05)
    assert not loop.done()  # the send being handled is not cut short
    release.set()
    with pytest.raises(RuntimeError, match="the layer failed"):
        await asyncio.wait_for(loop, 2)
    assert finished == ["websocket.receive"]


async def test_an_error_is_raised_rather_than_a_stop_that_came_with_it() -> None:
    async def stop() -> dict[str, Any]:
        raise StopConsumer

    async def fail() -> dict[str, Any]:
        raise RuntimeError("lost")

    async def dispatch(message: dict[str, Any]) -> None:
        raise AssertionError("nothing to dispatch")

    with pytest.raises(RuntimeError, match="lost"):
        await asyncio.wait_for(dispatch_loop.run([stop, fail], dispatch), 2)
