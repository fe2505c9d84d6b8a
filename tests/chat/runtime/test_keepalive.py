"""chat.runtime.keepalive: a keep-alive goes to the model API while a tool runs, is never stored
in the thread, and is never sent when nothing pends."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from chat.modelapi import client as model_client
from chat.models import Conversation, Message, ToolPair, UsageRecord
from chat.runtime import engine, keepalive
from tests.conftest import frames_until
from tests.reliability.helpers import eventually

pytestmark = pytest.mark.django_db(transaction=True)


async def cache_about_to_expire(conversation: Conversation) -> None:
    await Conversation.objects.filter(pk=conversation.pk).aupdate(
        last_request_at=timezone.now() - dt.timedelta(seconds=285)
    )


async def test_a_keepalive_is_sent_while_a_tool_runs_and_never_stored(
    connect: Any, owner: Any, conversation: Conversation
) -> None:
    # A prefix above the cache minimum (1,024 tokens), as a real system prompt often is.
    await Conversation.objects.filter(pk=conversation.pk).aupdate(
        system_prompt="Answer with care and cite sources. " * 200
    )
    socket = await connect(owner, conversation.pk)
    await socket.send_json_to({"type": "send", "text": "run the demo tool for 30 seconds"})
    await frames_until(socket, lambda f: "status-running" in f)

    async def reply_finished() -> bool:  # the reply that started the tool, and its turn's lease
        streaming = await conversation.messages.filter(status=Message.Status.STREAMING).aexists()
        leased = (
            await Conversation.objects.filter(pk=conversation.pk).exclude(lease_owner="").aexists()
        )
        return not streaming and not leased

    await eventually(reply_finished)
    kinds = [m.kind async for m in conversation.messages.order_by("seq")]
    stats = model_client.simulator().stats
    before = (stats.requests, stats.rejected_invalid)
    await cache_about_to_expire(conversation)

    assert await keepalive.send_due() == [conversation.pk]

    assert (stats.requests, stats.rejected_invalid) == (before[0] + 1, before[1])
    assert [m.kind async for m in conversation.messages.order_by("seq")] == kinds
    record = await UsageRecord.objects.aget(kind=UsageRecord.Kind.KEEPALIVE)
    assert record.conversation_id == conversation.pk and record.output_tokens == 0
    assert record.cache_read_tokens > 0  # it read, and so refreshed, the cached prefix

    pair = await ToolPair.objects.aget(conversation=conversation)
    await socket.send_json_to({"type": "cancel", "pair": pair.pk})
    await engine.idle()
    await cache_about_to_expire(conversation)
    requests = stats.requests
    assert await keepalive.send_due() == []  # nothing pends any more
    assert stats.requests == requests
    assert not await Message.objects.filter(kind="keepalive").aexists()
