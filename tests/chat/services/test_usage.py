"""chat.services.usage: every reply's usage is stored as a record, priced by the table."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async as db

from chat.billing.pricing import counts_from_usage
from chat.models import Conversation, Message, UsageRecord
from chat.runtime import engine
from chat.services import messages

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_reply_stores_its_usage_and_a_record(
    running_engine: None, conversation: Conversation
) -> None:
    await db(messages.post_user_message)(conversation.pk, "hello there")
    await engine.idle()
    reply = await Message.objects.aget(conversation=conversation, kind=Message.Kind.REPLY)
    record = await UsageRecord.objects.aget(message=reply)
    assert reply.usage["input_tokens"] > 0 and reply.usage["output_tokens"] > 0
    assert record.counts == counts_from_usage(reply.usage)
    assert record.kind == UsageRecord.Kind.REPLY
    assert record.model == conversation.model and record.user_id == conversation.owner_id


def test_a_reply_without_usage_records_nothing(conversation: Conversation) -> None:
    messages.post_user_message(conversation.pk, "hi")
    reply = messages.start_reply(conversation.pk, 1)
    messages.finish_reply(reply.pk, content=[], status=Message.Status.ERROR, usage={})
    assert not UsageRecord.objects.exists()


def test_records_outlive_their_conversation(conversation: Conversation) -> None:
    messages.post_user_message(conversation.pk, "hi")
    reply = messages.start_reply(conversation.pk, 1)
    usage = {"input_tokens": 5, "output_tokens": 7}
    messages.finish_reply(reply.pk, content=[], status=Message.Status.COMPLETE, usage=usage)
    conversation.delete()
    record = UsageRecord.objects.get()
    assert (record.conversation, record.message, record.output_tokens) == (None, None, 7)
