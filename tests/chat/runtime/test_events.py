"""chat.runtime.events: doorbells ring only after the change commits, to the right groups."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from chat.runtime import events


def _subscribe(*groups: str) -> Any:
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    for group in groups:
        async_to_sync(layer.group_add)(group, channel)

    async def drain() -> list[dict[str, Any]]:
        out = []
        while True:
            try:
                out.append(await asyncio.wait_for(layer.receive(channel), 0.05))
            except TimeoutError:
                return out

    return async_to_sync(drain)


def test_it_names_a_group_per_conversation_and_per_user() -> None:
    assert events.conversation_group(12) == "conv-12"
    assert events.user_group(3) == "user-3"


@pytest.mark.django_db(transaction=True)
def test_it_rings_the_conversation_and_its_owner_after_commit() -> None:
    received = _subscribe(events.conversation_group(12), events.user_group(3))
    with transaction.atomic():
        events.ring(12, 3)
        assert received() == []  # nothing before the commit
        committing = time.time()
    got = received()
    assert got == [
        {"type": "conv.changed", "at": got[0]["at"]},
        {"type": "convlist.changed", "conversation": 12},
    ]
    assert committing <= got[0]["at"] <= time.time()  # rung after the commit


@pytest.mark.django_db(transaction=True)
def test_it_never_rings_for_a_change_rolled_back() -> None:
    received = _subscribe(events.conversation_group(12))
    with pytest.raises(RuntimeError), transaction.atomic():
        events.ring(12)
        raise RuntimeError("rolled back")
    assert received() == []
