"""Live deltas of a streaming reply, coalesced: the first at once, then one frame per interval.

The reply's text goes out as Markdown, rendered here once for every tab of the group
(``chat.markdown_stream``): each frame carries the blocks finished since the last one and the
open block. Thinking goes out as plain text deltas.

Best effort by design: a tab that misses a frame catches up from the snapshot frames sent
with every database write, and the final database write supersedes everything.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from chat import markdown_stream
from chat.runtime import events


@dataclass
class Counters:
    deltas_in: int = 0
    frames_out: int = 0


# A frame re-sends the open Markdown block: one longer than 4 KB (a big code block being
# written) is sent less often, so that no more than 64 KB a second go to each tab.
OPEN_BLOCK_FREE_BYTES = 4096
OPEN_BLOCK_BYTES_PER_SECOND = 64_000
clock = time.monotonic  # (tests swap it, leaving the event loop's clock alone)

# (message id, counters) of the last replies this process streamed, newest last; for benchmarks.
recent_counters: deque[tuple[int, Counters]] = deque(maxlen=100)


@dataclass
class ReplyBroadcaster:
    conversation_id: int
    message_id: int
    interval_s: float
    counters: Counters = field(default_factory=Counters)
    _pending: dict[str, list[str]] = field(default_factory=lambda: {"text": [], "thinking": []})
    _sent: dict[str, int] = field(default_factory=lambda: {"text": 0, "thinking": 0})
    _text: str = ""  # the reply's text so far, as sent
    _markdown: markdown_stream.Progress = field(default_factory=markdown_stream.Progress)
    _open_size: int = 0  # bytes of the open block last sent
    _text_sent_at: float = 0.0  # clock() of that frame
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
        await self.flush(force=True)
        recent_counters.append((self.message_id, self.counters))

    async def text(self, delta: str) -> None:
        await self._add("text", delta)

    async def thinking(self, delta: str) -> None:
        await self._add("thinking", delta)

    async def _add(self, channel: str, delta: str) -> None:
        self.counters.deltas_in += 1
        self._pending[channel].append(delta)
        if not self._first_sent:
            self._first_sent = True
            await self.flush()

    def tool_input(self, index: int, tool_use_id: str, name: str, snapshot: object) -> None:
        self.counters.deltas_in += 1
        self._tool_inputs[index] = {
            "index": index,
            "id": tool_use_id,
            "name": name,
            "snapshot": json.dumps(snapshot, ensure_ascii=False),
        }

    def tool_done(self, index: int) -> None:
        """The call's input is complete and stored: its card replaces any pending input frame."""
        self._tool_inputs.pop(index, None)

    async def snapshot(self, text: str, thinking: str) -> None:
        """With every database write: everything so far, for tabs with a gap.

        What is pending goes out first, so the snapshot is never ahead of the frames: a tab
        that missed nothing already has all of it and ignores it, and only a tab with a gap
        takes the whole text (``text`` is the runner's copy of what the frames carry).
        """
        async with self._lock:
            await self._flush_pending(force=True)
            await self._send(
                {
                    "type": "reply.snapshot",
                    "message": self.message_id,
                    "text": self._text,
                    "thinking": thinking,
                }
            )

    async def flush(self, *, force: bool = False) -> None:
        async with self._lock:
            await self._flush_pending(force=force)

    async def _flush_pending(self, *, force: bool) -> None:
        for channel, pending in self._pending.items():
            if not pending or (channel == "text" and not force and self._text_throttled()):
                continue
            chunk = "".join(pending)
            pending.clear()
            offset = self._sent[channel]
            self._sent[channel] += len(chunk)
            if channel == "text":
                await self._send_markdown(chunk)
                continue
            await self._send(
                {
                    "type": "reply.delta",
                    "message": self.message_id,
                    "channel": channel,
                    "offset": offset,
                    "text": chunk,
                }
            )
        for item in self._tool_inputs.values():
            await self._send({"type": "reply.tool_input", "message": self.message_id, **item})
        self._tool_inputs.clear()

    def _text_throttled(self) -> bool:
        if self._open_size <= OPEN_BLOCK_FREE_BYTES:
            return False
        return clock() < self._text_sent_at + self._open_size / OPEN_BLOCK_BYTES_PER_SECOND

    async def _send_markdown(self, chunk: str) -> None:
        """The blocks finished since the last frame and the open block, rendered once."""
        self._text += chunk
        first = self._markdown.blocks
        step = markdown_stream.step(self._text, self._markdown)
        self._markdown = step.progress
        self._open_size, self._text_sent_at = len(step.open_html.encode()), clock()
        await self._send(
            {
                "type": "reply.markdown",
                "message": self.message_id,
                "first": first,
                "blocks": list(step.new_blocks),
                "open": step.open_html,
                "chars": len(self._text),
            }
        )

    async def _send(self, message: dict[str, Any]) -> None:
        self.counters.frames_out += 1
        await events.publish(self.group, message)

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            await self.flush()
