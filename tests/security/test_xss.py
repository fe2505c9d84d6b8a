"""The model's own output is hostile text: streamed, stored and rendered, it stays inert."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from chat.models import Conversation, Message
from chat.runtime import engine
from tests.conftest import frames_until
from tests.security.inert import dangers

pytestmark = pytest.mark.django_db(transaction=True)

PAYLOAD = (
    "<script>alert(1)</script> <img src=x onerror=alert(2)> [link](javascript:alert(3)) "
    '<a href="javascript:alert(4)">a</a> <div hx-get="/" hx-trigger="load" hx-on:load="alert(5)">d'
    "</div> **bold**"
)


def _page(user: Any, conversation: Conversation) -> str:
    browser = Client()
    browser.force_login(user)
    return browser.get(conversation.get_absolute_url()).content.decode()


async def test_it_streams_stores_and_renders_hostile_model_output_inert(
    connect: Any, owner: Any, conversation: Conversation
) -> None:
    socket = await connect(owner, conversation.pk)
    await socket.send_json_to({"type": "send", "text": f"reply with exactly: {PAYLOAD}"})
    frames = await frames_until(socket, lambda f: "kind-reply status-complete" in f)
    await engine.idle()
    assert any("-stream" in f for f in frames)  # it was streamed in deltas
    for frame in frames:
        assert dangers(frame) == [], frame
    reply = await Message.objects.filter(conversation=conversation, kind="reply").alast()
    assert reply.text.endswith(PAYLOAD)  # kept verbatim; only its rendering is defused
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in frames[-1]
    assert "<strong>bold</strong>" in frames[-1]  # still Markdown
    page = await sync_to_async(_page)(owner, conversation)
    assert dangers(page) == []
    assert "&lt;img src=x onerror=alert(2)&gt;" in page
