"""The sidebar's socket: a burst of doorbells costs a couple of reads, and the last list wins."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async as db
from channels.layers import get_channel_layer

from chat.models import Conversation
from chat.runtime import events
from chat.sockets import outbound
from tests.conftest import open_or_refused, session_cookie
from tests.security.sockets import communicator

pytestmark = pytest.mark.django_db(transaction=True)


async def _frames_until_quiet(socket: Any, quiet_s: float = 0.5) -> list[str]:
    frames = []
    while not await socket.receive_nothing(timeout=quiet_s):
        frames.append(await socket.receive_from())
    return frames


async def test_a_burst_of_doorbells_is_answered_by_few_lists_the_last_one_current(
    running_engine: None, owner: Any, conversation: Conversation, monkeypatch: pytest.MonkeyPatch
) -> None:
    from project.asgi import application

    reads = []
    original = outbound.conversation_list

    def counted(user_id: int, current: int | None) -> str:
        reads.append(user_id)
        return original(user_id, current)

    monkeypatch.setattr(outbound, "conversation_list", counted)
    cookie = await db(session_cookie)(owner)
    socket = communicator(application, f"/ws/conversations/current/{conversation.pk}/", cookie)
    assert (await open_or_refused(socket))[0]
    await socket.send_to(text_data='{"type": "sync"}')
    assert "Test" in await socket.receive_from(timeout=5)
    await Conversation.objects.filter(pk=conversation.pk).aupdate(title="Renamed")
    layer = get_channel_layer()
    for _ in range(20):
        await layer.group_send(events.user_group(owner.pk), {"type": "convlist.changed"})
    frames = await _frames_until_quiet(socket)
    # One read at a time, the bells rung meanwhile answered by one more: far fewer lists than
    # bells (two on an idle machine; a loaded one may finish a read between two bells).
    assert 1 <= len(frames) <= 5 and len(reads) == 1 + len(frames)
    assert "Renamed" in frames[-1]
    await socket.disconnect()
