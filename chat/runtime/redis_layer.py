"""channels_redis's layer, made to live through a Redis restart.

channels_redis keeps group membership only in Redis, so a Redis that restarts empty (or fails
over) forgets which sockets follow which conversation, and a receive that meets the dropped
connection raises, which ends the socket's consumer. This layer (the ``CHANNEL_LAYERS``
backend when ``REDIS_URL`` is set) does three things more:

* it remembers the groups of the channels this process receives on (sockets, the cancel
  doorbell), as they join and leave;
* a receive that fails on the connection waits and tries again instead of raising;
* a watcher (one task on the loop that receives) reads each Redis server's ``run_id`` every
  ``watch_interval`` seconds. When a server answers again after failing, or answers with
  another ``run_id`` (it restarted between two looks), the watcher joins every remembered
  group again and sends each local channel a ``layer.rejoined`` message, on which a socket
  resyncs from the database: whatever it missed while Redis was away, it gets then.

Nothing here stores anything: the database is the truth, Redis only the doorbell.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from channels_redis.core import RedisChannelLayer
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

REJOINED = "layer.rejoined"
RETRY_S = 0.5  # between receives while Redis is away


@dataclass
class ServerWatch:
    """What the watcher has seen of the Redis servers: pure, so it is tested on its own."""

    known: tuple[str, ...] | None = None  # run ids of the last answer
    lost: bool = False  # a look failed since the last answer

    def observe(self, run_ids: tuple[str, ...] | None) -> bool:
        """One look (``None``: a server did not answer). True when the servers are back after
        failing, or restarted between two looks: time to join the groups again."""
        if run_ids is None:
            self.lost = True
            return False
        back = self.lost or (self.known is not None and run_ids != self.known)
        self.known = run_ids
        self.lost = False
        return back


class RejoiningRedisChannelLayer(RedisChannelLayer):  # type: ignore[misc]
    def __init__(self, *args: Any, watch_interval: float = 1.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.watch_interval = watch_interval
        self.members: dict[str, set[str]] = {}  # local channel -> its groups
        self.rejoins = 0  # times the groups were joined again (for tests and logs)
        self._watch = ServerWatch()
        self._watcher: asyncio.Task[None] | None = None

    def _is_local(self, channel: str) -> bool:
        return "!" in channel and self.non_local_name(channel).endswith(self.client_prefix + "!")

    async def group_add(self, group: str, channel: str) -> None:
        if self._is_local(channel):
            self.members.setdefault(channel, set()).add(group)
            self._start_watcher()
        await super().group_add(group, channel)

    async def group_discard(self, group: str, channel: str) -> None:
        groups = self.members.get(channel)
        if groups is not None:
            groups.discard(group)
            if not groups:
                del self.members[channel]
        await super().group_discard(group, channel)

    async def receive(self, channel: str) -> dict[str, Any]:
        while True:
            try:
                return await super().receive(channel)  # type: ignore[no-any-return]
            except (RedisError, OSError):
                logger.warning("channel layer receive failed; trying again", exc_info=True)
                await asyncio.sleep(RETRY_S)

    def _start_watcher(self) -> None:
        loop = asyncio.get_running_loop()
        task = self._watcher
        if task is None or task.done() or task.get_loop() is not loop:
            self._watcher = loop.create_task(self._watch_forever(), name="redis-layer-watch")

    async def run_ids(self) -> tuple[str, ...] | None:
        try:
            infos = [await self.connection(i).info("server") for i in range(self.ring_size)]
        except (RedisError, OSError):
            return None
        return tuple(str(info.get("run_id", "")) for info in infos)

    async def _watch_forever(self) -> None:
        while True:
            if self._watch.observe(await self.run_ids()):
                await self.rejoin()
            await asyncio.sleep(self.watch_interval)

    async def rejoin(self) -> None:
        """Join every remembered group again, then ask each local channel to resync."""
        try:
            for channel, groups in list(self.members.items()):
                for group in list(groups):
                    await super().group_add(group, channel)
            # Counted once the groups are back, before any channel hears of it (a channel may
            # act on the message before this coroutine resumes).
            self.rejoins += 1
            logger.warning("Redis came back: %d local channels joined again", len(self.members))
            for channel in list(self.members):
                await self.send(channel, {"type": REJOINED})
        except (RedisError, OSError):
            logger.warning("joining the groups again failed; at the next look", exc_info=True)
            self._watch.lost = True
