"""Doorbells between processes: wake a web process to run a turn, stop a tool wherever it runs.

With several processes (``REDIS_URL`` set) a tool may finish on a worker that runs no turns,
and Cancel may be pressed in a tab served by another process than the tool's. The database
records what happened first; these messages only wake the process that acts on it:

* ``ring_kick``: one web process (whichever takes the message off the ``tandem.kick``
  channel) runs the conversation's turn now. A lost ring costs at most one sweep interval:
  every web process's sweeper looks for finished, unflushed pairs with no turn running.
* ``ring_cancel``: every process (the ``tandem-tools`` group) stops the call if it runs there.
  A lost ring is caught by the running tool's own heartbeat, which reads the pair's status.

The channel layer is at-most-once, which is why neither carries state of its own.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from chat.runtime import engine

logger = logging.getLogger(__name__)

KICK_CHANNEL = "tandem.kick"
CANCEL_GROUP = "tandem-tools"
REJOIN_S = 600.0  # group membership expires (a day by default): join again well before
RETRY_S = 0.5  # after the channel layer failed (Redis restarting)


def ring_kick(conversation_id: int) -> None:
    """From any thread: ask one web process to run this conversation's turn now."""
    _send_from_anywhere(KICK_CHANNEL, {"type": "conv.kick", "conversation": conversation_id})


def ring_cancel(tool_use_id: str) -> None:
    """From any thread: ask every process to stop this tool call if it runs there."""
    _send_from_anywhere(
        CANCEL_GROUP, {"type": "tool.cancel", "tool_use_id": tool_use_id}, group=True
    )


def _send_from_anywhere(target: str, message: dict[str, Any], *, group: bool = False) -> None:
    async def send() -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        try:
            if group:
                await layer.group_send(target, message)
            else:
                await layer.send(target, message)
        except Exception:
            logger.warning("doorbell %s to %s failed", message["type"], target, exc_info=True)

    if not engine.call_on_loop(lambda: engine.spawn(send())):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            async_to_sync(send)()  # a worker's thread: no server loop here
            return
        engine.spawn(send())  # on a worker's tool loop: send without blocking it


async def listen_for_kicks() -> None:
    """A web process's background loop: run the turns other processes ring for."""
    layer = get_channel_layer()
    while layer is not None:
        try:
            message = await layer.receive(KICK_CHANNEL)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.warning("kick doorbell failed; listening again", exc_info=True)
            await asyncio.sleep(RETRY_S)
            continue
        conversation_id = message.get("conversation")
        if isinstance(conversation_id, int):
            engine.kick(conversation_id)


async def listen_for_cancels() -> None:
    """Every process's background loop: stop the tool calls other processes cancel."""
    layer = get_channel_layer()
    while layer is not None:
        rejoin: asyncio.Task[None] | None = None
        try:
            # The default prefix: channels_redis receives every process-local channel of one
            # prefix with one blocking read, and a second prefix would starve the sockets'.
            channel = await layer.new_channel()
            await layer.group_add(CANCEL_GROUP, channel)
            rejoin = asyncio.get_running_loop().create_task(_keep_joined(layer, channel))
            while True:
                message = await layer.receive(channel)
                tool_use_id = message.get("tool_use_id")
                if isinstance(tool_use_id, str):
                    engine.cancel_tool_here(tool_use_id)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.warning("cancel doorbell failed; joining again", exc_info=True)
            await asyncio.sleep(RETRY_S)
        finally:
            if rejoin is not None:
                rejoin.cancel()


async def _keep_joined(layer: Any, channel: str) -> None:
    """Group membership expires (after a day by default): renew it well before."""
    while True:
        await asyncio.sleep(REJOIN_S)
        try:
            await layer.group_add(CANCEL_GROUP, channel)
        except Exception:
            logger.warning("renewing the cancel doorbell failed", exc_info=True)
