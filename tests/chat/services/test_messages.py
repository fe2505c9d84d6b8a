"""chat.services.messages: what a user wrote is checked once, stored in order, answered once."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from chat.models import Conversation, Message
from chat.services import messages
from chat.services.errors import UserInputError

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("text", ["", " ", "\n\t \n", "\u3000"])
def test_it_refuses_a_blank_message(text: str) -> None:
    with pytest.raises(UserInputError, match=messages.EMPTY_MESSAGE):
        messages.clean_user_text(text)


@override_settings(TANDEM_MAX_MESSAGE_CHARS=5)
def test_it_refuses_a_message_over_the_limit_or_not_text() -> None:
    assert messages.clean_user_text("12345") == "12345"
    with pytest.raises(UserInputError, match="limit 5"):
        messages.clean_user_text("123456")
    with pytest.raises(UserInputError, match="limit 3"):
        messages.clean_user_text("1234", limit=3)
    with pytest.raises(UserInputError, match="must be text"):
        messages.clean_user_text(["hi"])


def test_it_keeps_inner_whitespace_and_trims_blank_lines() -> None:
    assert messages.clean_user_text("\n  indented\n\n") == "  indented"


def test_it_stores_a_prompt_in_order_and_titles_the_conversation(
    conversation: Conversation,
) -> None:
    conversation.title = ""
    conversation.save()
    first = messages.post_user_message(conversation.pk, "What is 2+2?\nThanks")
    second = messages.post_user_message(conversation.pk, "And 3+3?")
    conversation.refresh_from_db()
    assert (first.seq, second.seq) == (1, 2) and first.text == "What is 2+2?\nThanks"
    assert conversation.title == "What is 2+2?"


def test_it_stores_nothing_when_the_text_is_refused(conversation: Conversation) -> None:
    with pytest.raises(UserInputError):
        messages.post_user_message(conversation.pk, "   ")
    assert not conversation.messages.exists()


def _failed_reply(conversation: Conversation) -> Message:
    messages.post_user_message(conversation.pk, "hello")
    reply = messages.start_reply(conversation.pk, answered_seq=1)
    return messages.finish_reply(reply.pk, content=[], status=Message.Status.ERROR, error="boom")


def test_it_retries_a_failed_reply_by_asking_for_its_turn_again(conversation: Any) -> None:
    reply = _failed_reply(conversation)
    assert messages.retry_reply(conversation.pk, reply.pk)
    reply.refresh_from_db()
    conversation.refresh_from_db()
    assert reply.superseded and conversation.answered_seq == 0


def test_it_retries_only_a_failed_reply_of_this_conversation(conversation: Any, owner: Any) -> None:
    other = Conversation.objects.create(owner=owner, title="other")
    reply = _failed_reply(conversation)
    assert not messages.retry_reply(other.pk, reply.pk)
    ok = messages.start_reply(conversation.pk, answered_seq=1)
    assert not messages.retry_reply(conversation.pk, ok.pk)  # still streaming


def test_it_asks_only_a_streaming_reply_to_stop(conversation: Any) -> None:
    messages.post_user_message(conversation.pk, "hello")
    reply = messages.start_reply(conversation.pk, answered_seq=1)
    assert messages.request_stop(conversation.pk, reply.pk)
    assert messages.save_reply_snapshot(reply.pk, [{"type": "text", "text": "so far"}])
    messages.finish_reply(reply.pk, content=[], status=Message.Status.INTERRUPTED)
    assert not messages.request_stop(conversation.pk, reply.pk)
