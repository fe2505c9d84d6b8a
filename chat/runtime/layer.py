"""The in-memory channel layer of a single server process, made cheap per message.

Channels' ``InMemoryChannelLayer`` scans every channel and group for expired entries on each
send and receive (work that grows with the number of open sockets, paid per frame), starts a
task per member for a group send, and deep-copies every message. Live deltas make all three
per-token costs. This layer keeps the same semantics, more cheaply:

* expiry is checked at most every ``CLEAN_INTERVAL_S`` (messages still expire after
  ``expiry`` seconds, give or take that interval);
* a group send puts the message straight on each member's queue (a put never waits), with
  one expiry time, and neither re-checks the members' names nor builds a queue it has;
* a flat message of immutable values and lists of them (every live event is one) is copied
  one level deep, which is what a deep copy of it amounts to; tuples of immutable values, to
  any depth (a doorbell's change), are shared as they are.

A layer shared by several processes is Redis (``REDIS_URL``), which this does not touch.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from copy import deepcopy
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer

CLEAN_INTERVAL_S = 1.0
_IMMUTABLE = (str, int, float, bool, type(None))


def copy_message(message: dict[str, Any]) -> dict[str, Any]:
    """A copy no receiver can change the sender's message through."""
    copy: dict[str, Any] = {}
    for key, value in message.items():
        if isinstance(value, _IMMUTABLE):
            copy[key] = value
        elif type(value) is list and all(isinstance(item, _IMMUTABLE) for item in value):
            copy[key] = list(value)  # a Markdown frame's finished blocks
        elif _frozen(value):
            copy[key] = value  # a doorbell's change (chat.sockets.digest): shared, not copied
        else:
            return deepcopy(message)
    return copy


def _frozen(value: object) -> bool:
    """Whether nothing inside can change: immutable values, in tuples (named ones too) only."""
    if isinstance(value, _IMMUTABLE):
        return True
    return isinstance(value, tuple) and all(_frozen(item) for item in value)


class ProcessLayer(InMemoryChannelLayer):  # type: ignore[misc]
    _cleaned_at = 0.0

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now - self._cleaned_at >= CLEAN_INTERVAL_S:
            self._cleaned_at = now
            super()._clean_expired()

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_channel_name(channel)
        assert "__asgi_channel__" not in message
        self._put(channel, time.time() + self.expiry, message)

    def _put(self, channel: str, expires: float, message: dict[str, Any]) -> None:
        queue = self.channels.get(channel)
        if queue is None:
            queue = self.channels[channel] = asyncio.Queue(maxsize=self.get_capacity(channel))
        try:
            queue.put_nowait((expires, copy_message(message)))
        except asyncio.QueueFull:
            raise ChannelFull(channel) from None

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        """Each member gets its own copy; their names were checked when they joined."""
        assert isinstance(message, dict), "Message is not a dict"
        self.require_valid_group_name(group)
        assert "__asgi_channel__" not in message
        self._clean_expired()
        expires = time.time() + self.expiry
        for channel in list(self.groups.get(group, ())):
            # At most once, as the layer promises: the database holds the truth.
            with contextlib.suppress(ChannelFull):
                self._put(channel, expires, message)
