"""User messages, model replies and notices: appended to the thread under a row lock."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from chat import compiled
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
) -> Message:
    """Append a message to a locked conversation, with the next seq and a new rev."""
    seq = conversation.next_seq
    rev = bump_rev(conversation, next_seq=seq + 1)
    return _create(
        conversation, seq=seq, rev=rev, role=role, kind=kind, content=content, status=status
    )


# A new message's INSERT, compiled once (chat/compiled.py); its other columns take defaults.
_new_message = compiled.Insert(
    Message,
    {
        "conversation_id": int,
        "seq": int,
        "rev": int,
        "role": str,
        "kind": str,
        "content": list,
        "status": str,
        "created_at": dt.datetime,
        "updated_at": dt.datetime,
    },
)


def _create(conversation: Conversation, **values: Any) -> Message:
    now = timezone.now()
    message = _new_message(
        conversation_id=conversation.pk, created_at=now, updated_at=now, **values
    )
    message.conversation = conversation
    return message


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


def post_user_message(conversation_id: int, text: object, *, kick: bool = True) -> Message:
    """Store what the user wrote, then ask the engine to answer it (``kick``; a caller that
    begins the turn itself passes False: ``turns.post_and_begin``)."""
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
        if kick:
            transaction.on_commit(lambda: engine.kick(conversation_id))
    return message


@compiled.update
def _answered(
    conversation_id: int, after: int, upto: int, rev: int
) -> tuple[QuerySet[Message], dict[str, object]]:
    prompts = Message.objects.filter(conversation_id=conversation_id, kind=Message.Kind.PROMPT)
    return prompts.filter(seq__gt=after, seq__lte=upto), {"rev": rev}


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
        _answered(conversation_id, before, answered_seq, rev)
        message = _create(
            conversation,
            seq=seq,
            rev=rev,
            role=Message.Role.ASSISTANT,
            kind=Message.Kind.REPLY,
            content=[],
            status=Message.Status.STREAMING,
        )
        events.ring(conversation_id, conversation.owner_id)
    return message


@compiled.update
def _save_snapshot(
    message_id: int, content: list[dict[str, Any]]
) -> tuple[QuerySet[Message], dict[str, object]]:
    streaming = Message.objects.filter(pk=message_id, status=Message.Status.STREAMING)
    return streaming.filter(stop_requested=False), {"content": content}


def save_reply_snapshot(message_id: int, content: list[dict[str, Any]]) -> bool:
    """Write the text streamed so far (at most about once a second); True if stop was asked
    or the reply is gone (its conversation was deleted, maybe by another process)."""
    if _save_snapshot(message_id, content):
        return False  # the usual case: one statement
    streaming = Message.objects.filter(pk=message_id, status=Message.Status.STREAMING)
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
        message = _reply.one(message_id)
        if message is None:
            raise ConversationGone(f"The reply {message_id} was deleted with its conversation.")
        # The conversation's row locked (a new rev); gone if deleted since the line above.
        conversation = lock(message.conversation_id)
        message.conversation = conversation
        message.rev = bump_rev(conversation)
        message.content = content
        message.status = status
        message.stop_reason = stop_reason or ""
        message.usage = usage or {}
        message.error = error
        message.api_message_id = api_message_id
        message.updated_at = timezone.now()
        _finished(
            message_id,
            message.rev,
            message.content,
            message.status,
            message.stop_reason,
            message.usage,
            message.error,
            message.api_message_id,
            message.updated_at,
        )
        usage_records.record(conversation, usage, message=message)
        events.ring(conversation.pk, conversation.owner_id)
    return message


@compiled.select
def _reply(message_id: int) -> QuerySet[Message]:
    return Message.objects.filter(pk=message_id)[:1]


@compiled.update
def _finished(
    message_id: int,
    rev: int,
    content: list[dict[str, Any]],
    status: str,
    stop_reason: str,
    usage: dict[str, Any],
    error: str,
    api_message_id: str,
    updated_at: dt.datetime,
) -> tuple[QuerySet[Message], dict[str, object]]:
    columns = {
        "rev": rev,
        "content": content,
        "status": status,
        "stop_reason": stop_reason,
        "usage": usage,
        "error": error,
        "api_message_id": api_message_id,
        "updated_at": updated_at,
    }
    return Message.objects.filter(pk=message_id), columns


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
