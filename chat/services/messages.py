"""User messages, model replies and notices: appended to the thread under a row lock."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chat.models import Conversation, Message
from chat.runtime import engine, events
from chat.services import usage as usage_records
from chat.services.conversations import bump_rev, derive_title, lock
from chat.services.errors import ConversationGone, UserInputError


def append(
    conversation: Conversation,
    *,
    role: str,
    kind: str,
    content: list[dict[str, Any]],
    status: str = Message.Status.COMPLETE,
    **fields: Any,
) -> Message:
    """Append a message to a locked conversation, with the next seq and a new rev."""
    seq = conversation.next_seq
    rev = bump_rev(conversation, next_seq=seq + 1)
    return Message.objects.create(
        conversation=conversation,
        seq=seq,
        rev=rev,
        role=role,
        kind=kind,
        content=content,
        status=status,
        **fields,
    )


EMPTY_MESSAGE = "An empty message cannot be sent."


def clean_user_text(text: object, *, limit: int | None = None) -> str:
    """The one check of what a user wrote (the socket's parser applies it too): text, not over
    the limit (default settings.TANDEM_MAX_MESSAGE_CHARS), not blank. Pure: no database."""
    if not isinstance(text, str):
        raise UserInputError("A message must be text.")
    limit = settings.TANDEM_MAX_MESSAGE_CHARS if limit is None else limit
    if len(text) > limit:
        raise UserInputError(
            f"That message is too long ({len(text):,} characters; limit {limit:,} characters)."
        )
    if not text.strip():
        raise UserInputError(EMPTY_MESSAGE)
    return text.strip("\n")


def post_user_message(conversation_id: int, text: object) -> Message:
    """Store what the user wrote, then ask the engine to answer it."""
    clean = clean_user_text(text)
    with transaction.atomic():
        conversation = lock(conversation_id)
        message = append(
            conversation,
            role=Message.Role.USER,
            kind=Message.Kind.PROMPT,
            content=[{"type": "text", "text": clean}],
        )
        if not conversation.title:
            conversation.title = derive_title(clean)
            conversation.save(update_fields=["title"])
        events.ring(conversation_id, conversation.owner_id)
        transaction.on_commit(lambda: engine.kick(conversation_id))
    return message


def start_reply(conversation_id: int, answered_seq: int) -> Message:
    """Open a streaming reply to everything up to ``answered_seq`` (what the request holds)."""
    with transaction.atomic():
        conversation = lock(conversation_id)
        before = conversation.answered_seq
        seq = conversation.next_seq
        # One UPDATE of the conversation: the reply's seq and rev, the answered mark, and the
        # prompt cache's start (it lives from here).
        rev = bump_rev(
            conversation,
            next_seq=seq + 1,
            answered_seq=max(before, answered_seq),
            last_request_at=timezone.now(),
            keepalives_sent=0,
        )
        # Prompts that were shown as queued are being answered now.
        conversation.messages.filter(
            kind=Message.Kind.PROMPT, seq__gt=before, seq__lte=answered_seq
        ).update(rev=rev)
        message = Message.objects.create(
            conversation=conversation,
            seq=seq,
            rev=rev,
            role=Message.Role.ASSISTANT,
            kind=Message.Kind.REPLY,
            content=[],
            status=Message.Status.STREAMING,
        )
        events.ring(conversation_id, conversation.owner_id)
    return message


def save_reply_snapshot(message_id: int, content: list[dict[str, Any]]) -> bool:
    """Write the text streamed so far (at most about once a second); True if stop was asked
    or the reply is gone (its conversation was deleted, maybe by another process)."""
    streaming = Message.objects.filter(pk=message_id, status=Message.Status.STREAMING)
    if streaming.filter(stop_requested=False).update(content=content):
        return False  # the usual case: one statement
    streaming.update(content=content)  # stop was asked (or the reply is gone or done)
    return not Message.objects.filter(pk=message_id, stop_requested=False).exists()


def finish_reply(
    message_id: int,
    *,
    content: list[dict[str, Any]],
    status: str,
    stop_reason: str = "",
    usage: dict[str, Any] | None = None,
    error: str = "",
    api_message_id: str = "",
) -> Message:
    with transaction.atomic():
        # The reply and its conversation in one query, the conversation's row locked (as
        # ``lock`` does) for the new rev.
        message = (
            Message.objects.select_related("conversation")
            .select_for_update(of=("conversation",))
            .filter(pk=message_id)
            .first()
        )
        if message is None:
            raise ConversationGone(f"The reply {message_id} was deleted with its conversation.")
        conversation = message.conversation
        message.rev = bump_rev(conversation)
        message.content = content
        message.status = status
        message.stop_reason = stop_reason or ""
        message.usage = usage or {}
        message.error = error
        message.api_message_id = api_message_id
        message.save()
        usage_records.record(conversation, usage, message=message)
        events.ring(conversation.pk, conversation.owner_id)
    return message


def request_stop(conversation_id: int, message_id: int) -> bool:
    """Ask a streaming reply to stop; the runner keeps its partial text as interrupted."""
    updated = Message.objects.filter(
        pk=message_id, conversation_id=conversation_id, status=Message.Status.STREAMING
    ).update(stop_requested=True)
    if updated:
        transaction.on_commit(lambda: engine.stop_reply(message_id))
    return bool(updated)


def retry_reply(conversation_id: int, message_id: int) -> bool:
    """Ask the model again for the turn a failed reply was answering."""
    with transaction.atomic():
        conversation = lock(conversation_id)
        message = (
            conversation.messages.filter(
                pk=message_id, status__in=[Message.Status.ERROR, Message.Status.INTERRUPTED]
            )
            .order_by()
            .first()
        )
        if message is None:
            return False
        previous = (
            conversation.messages.filter(seq__lt=message.seq, role__in=["user", "assistant"])
            .order_by("-seq")
            .first()
        )
        if previous is None or previous.role != Message.Role.USER:
            return False
        conversation.answered_seq = min(conversation.answered_seq, previous.seq - 1)
        conversation.save(update_fields=["answered_seq"])
        message.rev = bump_rev(conversation)
        message.error = ""
        message.superseded = True
        message.save(update_fields=["rev", "superseded", "updated_at"])
        events.ring(conversation_id, conversation.owner_id)
        transaction.on_commit(lambda: engine.kick(conversation_id))
    return True
