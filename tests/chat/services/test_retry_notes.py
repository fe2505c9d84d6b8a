"""chat.services.retry_notes: the "retrying…" note shows on a streaming reply only."""

from __future__ import annotations

import pytest

from chat.models import Conversation, Message
from chat.services import messages, retry_notes

pytestmark = pytest.mark.django_db


def test_it_shows_then_clears_the_note_with_a_new_rev(conversation: Conversation) -> None:
    messages.post_user_message(conversation.pk, "hello")
    reply = messages.start_reply(conversation.pk, answered_seq=1)
    conversation.refresh_from_db()
    before = conversation.rev
    assert retry_notes.set_note(reply.pk, "Retrying… (attempt 2 of 3)")
    reply.refresh_from_db()
    conversation.refresh_from_db()
    assert reply.error == "Retrying… (attempt 2 of 3)" and reply.rev == conversation.rev > before
    assert retry_notes.set_note(reply.pk, "")
    reply.refresh_from_db()
    assert reply.error == ""


def test_it_leaves_a_finished_or_missing_reply_alone(conversation: Conversation) -> None:
    messages.post_user_message(conversation.pk, "hello")
    reply = messages.start_reply(conversation.pk, answered_seq=1)
    messages.finish_reply(reply.pk, content=[], status=Message.Status.COMPLETE)
    assert not retry_notes.set_note(reply.pk, "Retrying…")
    assert not retry_notes.set_note(reply.pk + 1000, "Retrying…")
    reply.refresh_from_db()
    assert reply.error == ""
