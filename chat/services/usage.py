"""Recording what model requests consumed: one usage record per reply or keep-alive."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from chat import compiled
from chat.models import Conversation, Message, UsageRecord

# A reply's record: its INSERT compiled once (chat/compiled.py).
_new_record = compiled.Insert(
    UsageRecord,
    {
        "user_id": int,
        "conversation_id": int,
        "message_id": int,
        "kind": str,
        "model": str,
        "created_at": dt.datetime,
        **dict.fromkeys(UsageRecord.fields_from_usage(None), int),
    },
)


@compiled.select
def _of_message(message_id: int) -> QuerySet[UsageRecord]:
    return UsageRecord.objects.filter(message_id=message_id)[:1]


def record(
    conversation: Conversation,
    usage: dict[str, Any] | None,
    *,
    message: Message | None = None,
    kind: str = UsageRecord.Kind.REPLY,
) -> UsageRecord | None:
    """Store the usage of one request (nothing when the API reported none)."""
    if not usage:
        return None
    fields = UsageRecord.fields_from_usage(usage)
    if message is not None:
        # update_or_create without its savepoint: the caller holds the conversation's lock.
        values = {
            "user_id": conversation.owner_id,
            "conversation": conversation,
            "kind": kind,
            "model": conversation.model,
            **fields,
        }
        row = _of_message.one(message.pk)
        if row is None:
            return _new_record(
                user_id=conversation.owner_id,
                conversation_id=conversation.pk,
                message_id=message.pk,
                kind=kind,
                model=conversation.model,
                created_at=timezone.now(),
                **fields,
            )
        for name, value in values.items():
            setattr(row, name, value)
        row.save()
        return row
    return UsageRecord.objects.create(
        user_id=conversation.owner_id,
        conversation=conversation,
        kind=kind,
        model=conversation.model,
        **fields,
    )
