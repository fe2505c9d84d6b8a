"""Recording what model requests consumed: one usage record per reply or keep-alive."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from chat import compiled
from chat.models import Conversation, Message, UsageRecord


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
            return UsageRecord.objects.create(message=message, **values)
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
