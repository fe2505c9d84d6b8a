"""chat.runtime.broadcast: the first delta at once, later ones coalesced, offsets that add up;
the reply's text as Markdown blocks rendered once for the group, snapshots never ahead."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from channels.layers import get_channel_layer

from chat.runtime import broadcast, events
from chat.runtime.broadcast import ReplyBroadcaster
from tests.conftest import drain


@pytest.fixture
async def listener() -> AsyncIterator[Any]:
    """A channel in conversation 5's group on the real (in-memory) channel layer."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(events.conversation_group(5), channel)

    async def received() -> list[dict[str, Any]]:
        return await drain(layer, channel)

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
    assert [(m["chars"], m["open"]) for m in first] == [(3, "<p>Hel</p>\n")]
    assert [(m["chars"], m["open"]) for m in rest] == [(12, "<p>Hello, world</p>\n")]
    assert (reply.counters.deltas_in, reply.counters.frames_out) == (3, 2)


async def test_it_sends_each_finished_block_once_and_the_open_block_each_frame(
    listener: Any,
) -> None:
    reply = ReplyBroadcaster(conversation_id=5, message_id=9, interval_s=60)
    for delta in ["# Ti", "tle\n\nSome **bo", "ld** text\n\n- one\n", "- two"]:
        await reply.text(delta)
        await reply.flush()
    sent = [(m["first"], m["blocks"], m["open"]) for m in await listener()]
    assert sent == [
        (0, [], "<h1>Ti</h1>\n"),
        (0, [], "<h1>Title</h1>\n<p>Some **bo</p>\n"),  # "Some **bo" is not a whole line
        (
            0,
            ["<h1>Title</h1>\n", "<p>Some <strong>bold</strong> text</p>\n"],
            "<ul>\n<li>one</li>\n</ul>\n",
        ),
        (2, [], "<ul>\n<li>one</li>\n<li>two</li>\n</ul>\n"),
    ]


async def test_a_snapshot_sends_what_is_pending_first_so_it_is_never_ahead_of_the_frames(
    listener: Any,
) -> None:
    reply = ReplyBroadcaster(conversation_id=5, message_id=9, interval_s=60)
    await reply.text("Para one\n\n")
    await reply.text("Para two")  # pending: not flushed yet
    await reply.snapshot("Para one\n\nPara two", "")
    sent = await listener()
    assert [m["type"] for m in sent] == ["reply.markdown", "reply.markdown", "reply.snapshot"]
    assert sent[1]["chars"] == len(sent[2]["text"]) == len("Para one\n\nPara two")


async def test_it_keeps_text_and_thinking_offsets_apart(listener: Any) -> None:
    reply = ReplyBroadcaster(conversation_id=5, message_id=9, interval_s=60)
    await reply.thinking("hmm")
    await reply.text("ok")
    await reply.thinking(" yes")
    await reply.flush()
    sent = [(m["type"], m.get("offset"), m.get("text")) for m in await listener()]
    assert sent == [
        ("reply.delta", 0, "hmm"),
        ("reply.markdown", None, None),
        ("reply.delta", 3, " yes"),
    ]


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
    sent = await listener()
    assert len(sent) >= 2 and sent[-1]["open"] == "<p>abc</p>\n"


async def test_a_long_open_block_is_sent_less_often_and_all_of_it_at_the_end(
    listener: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [100.0]
    monkeypatch.setattr(broadcast, "clock", lambda: now[0])
    reply = ReplyBroadcaster(conversation_id=5, message_id=9, interval_s=60)
    code = "".join(f"line = {n}\n" for n in range(2000))  # about 26 KB of open code block
    await reply.text("```\n" + code)  # the first frame goes at once
    await reply.text("more = 1\n")
    now[0] += 0.3
    await reply.flush()  # 26 KB at 64 KB/s: not before 0.4 s
    assert len(await listener()) == 1
    now[0] += 0.2
    await reply.flush()
    [second] = await listener()
    assert second["open"].endswith("more = 1\n</code></pre>\n")
    await reply.text("last = 2\n")
    await reply.close()  # whatever is held back goes at the end
    [last] = await listener()
    assert last["open"].endswith("last = 2\n</code></pre>\n")
