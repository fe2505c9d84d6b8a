"""Live deltas of a streaming reply, coalesced: the first at once, then one frame per interval.

Best effort by design: a tab that misses a frame catches up from the snapshot frames sent
with every database write, and the final database write supersedes everything.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from chat import events


@dataclass
class Counters:
    deltas_in: int = 0
    frames_out: int = 0


# (message id, counters) of the last replies this process streamed, newest last; for benchmarks.
recent_counters: deque[tuple[int, Counters]] = deque(maxlen=100)


@dataclass
class ReplyBroadcaster:
    conversation_id: int
    message_id: int
    interval_s: float
    counters: Counters = field(default_factory=Counters)
    _text: list[str] = field(default_factory=list)
    _sent_chars: int = 0
    _pending_chars: int = 0
    _thinking: list[str] = field(default_factory=list)
    _tool_inputs: dict[int, dict[str, Any]] = field(default_factory=dict)
    _ticker: asyncio.Task[None] | None = None
    _first_sent: bool = False
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def group(self) -> str:
        return events.conversation_group(self.conversation_id)

    async def start(self) -> None:
        self._ticker = asyncio.get_running_loop().create_task(self._tick())

    async def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            await asyncio.gather(self._ticker, return_exceptions=True)
        await self.flush()
        recent_counters.append((self.message_id, self.counters))

    async def text(self, delta: str) -> None:
        self.counters.deltas_in += 1
        self._text.append(delta)
        self._pending_chars += len(delta)
        if not self._first_sent:
            self._first_sent = True
            await self.flush()

    def thinking(self, delta: str) -> None:
        self.counters.deltas_in += 1
        self._thinking.append(delta)

    def tool_input(self, index: int, tool_use_id: str, name: str, snapshot: object) -> None:
        self.counters.deltas_in += 1
        self._tool_inputs[index] = {
            "index": index,
            "id": tool_use_id,
            "name": name,
            "snapshot": json.dumps(snapshot, ensure_ascii=False),
        }

    async def snapshot(self, text: str) -> None:
        """With every database write: the whole text so far, for tabs with a gap."""
        async with self._lock:
            await self._send({"type": "reply.snapshot", "message": self.message_id, "text": text})

    async def flush(self) -> None:
        async with self._lock:
            if self._text:
                chunk = "".join(self._text)
                self._text.clear()
                offset = self._sent_chars
                self._sent_chars += len(chunk)
                self._pending_chars = 0
                await self._send(
                    {
                        "type": "reply.delta",
                        "message": self.message_id,
                        "offset": offset,
                        "text": chunk,
                    }
                )
            if self._thinking:
                chunk = "".join(self._thinking)
                self._thinking.clear()
                await self._send(
                    {"type": "reply.thinking", "message": self.message_id, "text": chunk}
                )
            for item in self._tool_inputs.values():
                await self._send({"type": "reply.tool_input", "message": self.message_id, **item})
            self._tool_inputs.clear()

    async def _send(self, message: dict[str, Any]) -> None:
        self.counters.frames_out += 1
        await events.publish(self.group, message)

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            await self.flush()
