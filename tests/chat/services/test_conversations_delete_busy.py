"""Deleting a conversation stops its work first, quietly (issue 15, item 4)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.urls import reverse

from chat.modelapi.client import simulator
from chat.models import Conversation, Message, ToolPair
from chat.runtime import engine
from chat.services import conversations, messages, pairing
from chat.services.errors import ConversationGone
from tests.chat.sockets.stream_dom import STREAM_FRAME
from tests.conftest import frames_until

pytestmark = pytest.mark.django_db(transaction=True)


def delete_as(user: Any, conversation_id: int) -> int:
    browser = Client()
    browser.force_login(user)
    return browser.post(reverse("chat:delete", args=[conversation_id])).status_code


async def test_deleting_stops_the_stream_and_cancels_the_tool_without_errors(
    connect: Any, owner: Any, conversation: Conversation, caplog: pytest.LogCaptureFixture
) -> None:
    socket = await connect(owner, conversation.pk)
    await socket.send_json_to({"type": "send", "text": "run the demo tool for 30 seconds"})
    await frames_until(socket, lambda f: "status-running" in f)
    simulator().tokens_per_second = 20.0  # this reply would stream for many seconds
    await socket.send_json_to({"type": "send", "text": "meanwhile, write a long answer please"})
    await frames_until(socket, lambda f: STREAM_FRAME in f)
    # The card says "running" once the row does; the task registers its handle with the engine
    # one database hop later (tasks._run), which in a busy run of the suite came after this.
    async with asyncio.timeout(2):
        while not engine.running_tools():  # noqa: ASYNC110 - waiting on another task's state
            await asyncio.sleep(0.01)
    with caplog.at_level(logging.INFO):
        started = time.monotonic()
        assert await sync_to_async(delete_as)(owner, conversation.pk) == 302
        async with asyncio.timeout(3):  # the tool had 30 s to go, the reply many seconds
            await engine.idle()
        await asyncio.sleep(0.2)  # anything that would still run after idle has its chance
    assert time.monotonic() - started < 3
    assert engine.running_tools() == []
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert errors == []
    assert not await Conversation.objects.filter(pk=conversation.pk).aexists()
    assert await Message.objects.filter(conversation_id=conversation.pk).acount() == 0
    assert await ToolPair.objects.filter(conversation_id=conversation.pk).acount() == 0


def test_a_reply_streaming_in_another_process_stops_at_its_next_snapshot(
    conversation: Conversation,
) -> None:
    messages.post_user_message(conversation.pk, "hello")
    reply = messages.start_reply(conversation.pk, 1)
    assert messages.save_reply_snapshot(reply.pk, []) is False
    conversations.delete_conversation(conversation.pk)
    assert messages.save_reply_snapshot(reply.pk, []) is True  # the runner stops there


def test_work_that_meets_a_deleted_conversation_gets_conversation_gone_or_nothing(
    conversation: Conversation,
) -> None:
    messages.post_user_message(conversation.pk, "calculate 1+1")
    reply = messages.start_reply(conversation.pk, 1)
    block = {"type": "tool_use", "id": "toolu_gone", "name": "calculate", "input": {}}
    pair = pairing.store_tool_call(conversation.pk, reply.pk, block, 0)
    conversations.delete_conversation(conversation.pk)
    with pytest.raises(ConversationGone):
        messages.finish_reply(reply.pk, content=[], status=Message.Status.COMPLETE)
    with pytest.raises(ConversationGone):
        pairing.store_tool_call(conversation.pk, reply.pk, {**block, "id": "toolu_2"}, 1)
    assert pairing.record_result(pair.pk, status="succeeded", content="2", is_error=False) is None
