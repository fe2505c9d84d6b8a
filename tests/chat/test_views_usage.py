"""The chat page shows each reply's usage on demand and the conversation's totals and cost;
nobody sees another user's."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from chat.models import Conversation, Message
from chat.services import messages

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("price_table")]

USAGE = {
    "input_tokens": 12,
    "cache_creation_input_tokens": 2_048,
    "cache_read_input_tokens": 123_456,
    "output_tokens": 1_500,
}


def answered(conversation: Conversation) -> Message:
    messages.post_user_message(conversation.pk, "hello")
    reply = messages.start_reply(conversation.pk, 1)
    content = [{"type": "text", "text": "Hi!"}]
    return messages.finish_reply(reply.pk, content=content, status="complete", usage=USAGE)


def test_a_reply_shows_its_usage_with_grouped_numbers(
    client: Client, owner: Any, conversation: Conversation
) -> None:
    reply = answered(conversation)
    client.force_login(owner)
    html = client.get(conversation.get_absolute_url()).content.decode()
    assert f'<details id="msg-{reply.pk}-usage" class="usage"><summary>Usage</summary>' in html
    assert "Input 12 · output 1,500 · cache read 123,456 · cache write 2,048 tokens" in html


def test_the_conversation_shows_its_totals_and_estimated_cost(
    client: Client, owner: Any, conversation: Conversation
) -> None:
    answered(conversation)
    answered(conversation)
    client.force_login(owner)
    html = client.get(conversation.get_absolute_url()).content.decode()
    # 2 x (12 x 3 + 2,048 x 3.75 + 123,456 x 0.3 + 1,500 x 15) / 1e6 = $0.1345
    assert "This conversation: 254,032 tokens (input 24, output 3,000," in html
    assert "estimated cost $0.13." in html


def test_a_conversation_without_usage_shows_no_totals(
    client: Client, owner: Any, conversation: Conversation
) -> None:
    client.force_login(owner)
    html = client.get(conversation.get_absolute_url()).content.decode()
    assert '<p id="conv-usage" class="conv-usage"></p>' in html


def test_an_outsider_sees_nothing_of_anothers_usage(
    client: Client, outsider: Any, conversation: Conversation
) -> None:
    answered(conversation)
    client.force_login(outsider)
    response = client.get(conversation.get_absolute_url())
    assert response.status_code == 404
    assert "123,456" not in response.content.decode()
