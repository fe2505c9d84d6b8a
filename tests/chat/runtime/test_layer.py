"""chat.runtime.layer: the in-memory layer's semantics, at a lower cost per message."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.exceptions import ChannelFull

from chat.runtime import layer
from chat.runtime.layer import ProcessLayer


async def test_it_delivers_a_group_message_to_every_member_once() -> None:
    bus = ProcessLayer()
    a, b = await bus.new_channel(), await bus.new_channel()
    await bus.group_add("conv-1", a)
    await bus.group_add("conv-1", b)
    await bus.group_send("conv-1", {"type": "reply.delta", "text": "hi"})
    assert await bus.receive(a) == {"type": "reply.delta", "text": "hi"}
    assert await bus.receive(b) == {"type": "reply.delta", "text": "hi"}
    assert bus.channels == {}  # nothing more queued


async def test_it_keeps_receivers_from_changing_what_was_sent() -> None:
    bus = ProcessLayer()
    channel = await bus.new_channel()
    nested = {"type": "x", "items": [1]}
    await bus.send(channel, nested)
    received = await bus.receive(channel)
    received["items"].append(2)
    flat = {"type": "y", "text": "a"}
    await bus.send(channel, flat)
    got = await bus.receive(channel)
    got["text"] = "changed"
    assert nested == {"type": "x", "items": [1]} and flat == {"type": "y", "text": "a"}


async def test_it_drops_a_group_message_for_a_full_member_only() -> None:
    bus = ProcessLayer(capacity=1)
    full, free = await bus.new_channel(), await bus.new_channel()
    await bus.send(full, {"type": "x"})
    with pytest.raises(ChannelFull):
        await bus.send(full, {"type": "x"})
    await bus.group_add("g", full)
    await bus.group_add("g", free)
    await bus.group_send("g", {"type": "y"})
    assert await bus.receive(free) == {"type": "y"}
    assert await bus.receive(full) == {"type": "x"}


async def test_it_still_expires_old_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layer, "CLEAN_INTERVAL_S", 0.0)
    bus = ProcessLayer(expiry=0)
    channel = await bus.new_channel()
    await bus.group_add("g", channel)
    await bus.send(channel, {"type": "old"})
    await asyncio.sleep(0.01)
    await bus.group_send("other", {"type": "z"})  # sends clean up too
    assert channel not in bus.channels
    assert channel not in bus.groups.get("g", {})  # an expired member leaves its groups


async def test_each_member_gets_its_own_copy_of_a_frames_blocks() -> None:
    bus = ProcessLayer()
    a, b = await bus.new_channel(), await bus.new_channel()
    await bus.group_add("conv-1", a)
    await bus.group_add("conv-1", b)
    frame = {"type": "reply.markdown", "blocks": ["<p>a</p>"], "open": ""}
    await bus.group_send("conv-1", frame)
    first, second = await bus.receive(a), await bus.receive(b)
    first["blocks"].append("<p>b</p>")
    assert second["blocks"] == frame["blocks"] == ["<p>a</p>"]


def test_a_copy_is_deep_where_a_value_is_not_flat() -> None:
    nested: dict[str, Any] = {"type": "x", "items": [[1]], "more": {"a": 1}, "tuple": ("a",)}
    copy = layer.copy_message(nested)
    assert copy == nested
    assert copy["items"][0] is not nested["items"][0] and copy["more"] is not nested["more"]


def test_tuples_of_immutable_values_are_shared_at_any_depth() -> None:
    """A doorbell's change (chat.sockets.digest) is tuples of strings and ints: no receiver
    can change it, so every member gets the same one."""
    change = ("title", 3, (("<p>a</p>", 1), ()), ("x",))
    message = {"type": "conv.changed", "start": (2, 4), "digest": change}
    copy = layer.copy_message(message)
    assert copy == message and copy["digest"] is change and copy is not message
    mutable = {"type": "x", "digest": ("a", ["b"])}
    assert layer.copy_message(mutable)["digest"][1] is not mutable["digest"][1]
