"""chat.runtime.broadcast: the first delta at once, later ones coalesced, offsets that add up."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from channels.layers import get_channel_layer

from chat.runtime import events
from chat.runtime.broadcast import ReplyBroadcaster


@pytest.fixture
async def listener() -> AsyncIterator[Any]:
    """A channel in conversation 5's group on the real (in-memory) channel layer."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(events.conversation_group(5), channel)

    async def received() -> list[dict[str, Any]]:
        out = []
        while True:
            try:
                out.append(await asyncio.wait_for(layer.receive(channel), 0.05))
            except TimeoutError:
                return out

    yield received
    await layer.group_discard(events.conversation_group(5), channel)


async def test_it_sends_the_first_delta_at_once_and_coalesces_the_rest(listener: Any) -> None:
    reply = ReplyBroadcaster(conversation_id=5, message_id=9, interval_s=60)
    await reply.text("Hel")
    await reply.text("lo, ")
    await reply.text("world")
    first = await listener()
    await reply.flush()
    rest = await listener()
    assert [(m["offset"], m["text"]) for m in first] == [(0, "Hel")]
    assert [(m["offset"], m["text"]) for m in rest] == [(3, "lo, world")]
    assert (reply.counters.deltas_in, reply.counters.frames_out) == (3, 2)


async def test_it_keeps_text_and_thinking_offsets_apart(listener: Any) -> None:
    reply = ReplyBroadcaster(conversation_id=5, message_id=9, interval_s=60)
    await reply.thinking("hmm")
    await reply.text("ok")
    await reply.thinking(" yes")
    await reply.flush()
    sent = [(m["channel"], m["offset"], m["text"]) for m in await listener()]
    assert sent == [("thinking", 0, "hmm"), ("text", 0, "ok"), ("thinking", 3, " yes")]


async def test_it_sends_only_the_latest_input_of_a_tool_still_being_written(
    listener: Any,
) -> None:
    reply = ReplyBroadcaster(conversation_id=5, message_id=9, interval_s=60)
    reply.tool_input(0, "toolu_1", "calculate", {"expression": "1"})
    reply.tool_input(0, "toolu_1", "calculate", {"expression": "1+1"})
    reply.tool_input(1, "toolu_2", "calculate", {})
    reply.tool_done(1)  # stored: its card replaces the input frame
    await reply.flush()
    sent = await listener()
    assert [(m["type"], m["index"], m["snapshot"]) for m in sent] == [
        ("reply.tool_input", 0, '{"expression": "1+1"}')
    ]


async def test_it_ticks_on_its_own_and_flushes_what_is_left_on_close(listener: Any) -> None:
    reply = ReplyBroadcaster(conversation_id=5, message_id=9, interval_s=0.01)
    await reply.start()
    await reply.text("a")
    await reply.text("b")
    await asyncio.sleep(0.05)
    await reply.text("c")
    await reply.close()
    assert "".join(m["text"] for m in await listener()) == "abc"
