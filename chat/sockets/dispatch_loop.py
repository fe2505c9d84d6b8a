"""A socket's loop over its two inboxes (the browser and the channel layer), cheaper per message
than Channels' own.

Channels' ``await_many_dispatch`` makes a new task for every message it receives and waits on
both inboxes with ``asyncio.wait`` each time. A live frame reaches every tab per token, so that
was a large part of a delta's cost in the consumer. Here each inbox has one task for the
socket's life, which receives a message and handles it under a lock shared by both:

* handlers still run one at a time, in the order their messages were taken;
* an inbox is not read again until its last message has been handled, so the channel layer's
  capacity still bounds what can wait for a slow socket;
* the first handler to raise (``StopConsumer`` when the browser leaves) ends the loop, and the
  other inbox's receive is cancelled, as Channels does; an inbox whose receive fails waits for
  a running handler to finish first, as it would have in Channels' loop.

Handlers run in the two pump tasks, not in the consumer's own task: a context variable one
handler sets is not seen by a handler of the other inbox (nothing here relies on that).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from channels.exceptions import StopConsumer

Receive = Callable[[], Awaitable[dict[str, Any]]]
Dispatch = Callable[[dict[str, Any]], Awaitable[None]]


async def run(inboxes: Sequence[Receive], dispatch: Dispatch) -> None:
    """Receive from every inbox and dispatch each message, one at a time, until one raises."""
    turn = asyncio.Lock()

    async def pump(receive: Receive) -> None:
        while True:
            try:
                message = await receive()
            except Exception:
                async with turn:  # not while the other inbox's handler is still running
                    raise
            async with turn:
                await dispatch(message)

    pumps = [asyncio.ensure_future(pump(receive)) for receive in inboxes]
    try:
        done, _ = await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        # A pump ends only by raising: StopConsumer, or an error, which goes first.
        errors = [error for task in done if (error := task.exception()) is not None]
        errors.sort(key=lambda error: isinstance(error, StopConsumer))
        if errors:
            raise errors[0]
    finally:
        for task in pumps:
            task.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
