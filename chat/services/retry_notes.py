"""The visible state of a reply while Tandem waits to ask the model API again.

Written to the reply's ``error`` field while it is still streaming, with a new rev and a
doorbell, so every open tab shows it and a tab that reconnects meanwhile sees it too.
"""

from __future__ import annotations

from django.db import transaction

from chat.models import Message
from chat.runtime import events
from chat.services.conversations import bump_rev, lock


def set_note(message_id: int, text: str) -> bool:
    """Show (or, with "", clear) the note on a streaming reply; False if it is not streaming."""
    with transaction.atomic():
        message = Message.objects.filter(pk=message_id).only("conversation_id").first()
        if message is None:
            return False
        conversation = lock(message.conversation_id)
        updated = Message.objects.filter(pk=message_id, status=Message.Status.STREAMING).update(
            error=text, rev=conversation.rev + 1
        )
        if not updated:
            return False
        bump_rev(conversation)
        events.ring(conversation.pk, conversation.owner_id)
    return True
