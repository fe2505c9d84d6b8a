"""chat.services.keepalive: due only while a tool pends, no turn runs, and the cache is about
to expire; claimed by one process at a time."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from chat.models import Conversation, Message, ToolPair
from chat.services import keepalive, messages

pytestmark = pytest.mark.django_db

CALL = {"type": "tool_use", "id": "toolu_ka", "name": "tool_buffer_demo", "input": {}}


def waiting_on_a_tool(conversation: Conversation, *, seconds_ago: float = 280.0) -> ToolPair:
    messages.post_user_message(conversation.pk, "run the demo tool for 20 minutes")
    reply = messages.start_reply(conversation.pk, 1)
    messages.finish_reply(
        reply.pk, content=[{"type": "text", "text": "Started."}, CALL], status="complete"
    )
    pair = ToolPair.objects.create(
        conversation=conversation, message=reply, tool_use_id="toolu_ka", tool_name=CALL["name"]
    )
    Conversation.objects.filter(pk=conversation.pk).update(
        last_request_at=timezone.now() - dt.timedelta(seconds=seconds_ago)
    )
    return pair


def test_it_is_due_shortly_before_the_cache_expires_while_a_tool_pends(
    conversation: Conversation,
) -> None:
    waiting_on_a_tool(conversation)
    assert keepalive.due() == [conversation.pk]


@pytest.mark.parametrize("seconds_ago", [100.0, 301.0])
def test_it_is_not_due_too_early_or_after_expiry(
    conversation: Conversation, seconds_ago: float
) -> None:
    waiting_on_a_tool(conversation, seconds_ago=seconds_ago)
    assert keepalive.due() == []


def test_it_is_never_due_when_nothing_pends(conversation: Conversation) -> None:
    pair = waiting_on_a_tool(conversation)
    pair.move_to(ToolPair.Status.SUCCEEDED, "finished")
    pair.save()
    assert keepalive.due() == []
    assert keepalive.claim(conversation.pk) is None


def test_it_is_not_due_while_a_turn_runs_or_the_wait_used_its_keepalives(
    conversation: Conversation,
) -> None:
    waiting_on_a_tool(conversation)
    Conversation.objects.filter(pk=conversation.pk).update(lease_owner="someone")
    assert keepalive.due() == []
    Conversation.objects.filter(pk=conversation.pk).update(lease_owner="", keepalives_sent=11)
    assert keepalive.due() == []


@override_settings(TANDEM_CACHE_STRATEGY="1h")
def test_it_is_off_with_the_one_hour_strategy(conversation: Conversation) -> None:
    waiting_on_a_tool(conversation)
    assert keepalive.due() == []


def test_one_claim_per_expiry_and_the_request_stores_nothing(conversation: Conversation) -> None:
    waiting_on_a_tool(conversation)
    count = Message.objects.count()
    request: Any = keepalive.claim(conversation.pk)
    assert request is not None and request["max_tokens"] == 0
    assert keepalive.claim(conversation.pk) is None  # the lifetime now runs from the claim
    conversation.refresh_from_db()
    assert conversation.keepalives_sent == 1
    assert Message.objects.count() == count
