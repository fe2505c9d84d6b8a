"""Creating, renaming and deleting conversations, and bumping their change counter."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from chat.models import Conversation
from chat.runtime import events
from chat.services.errors import UserInputError

TITLE_MAX = 200


def lock(conversation_id: int) -> Conversation:
    """Lock the conversation row for the rest of the transaction (seq and rev allocation)."""
    return Conversation.objects.select_for_update().get(pk=conversation_id)


def bump_rev(conversation: Conversation, **extra: Any) -> int:
    """Give the locked conversation a new revision; returns it."""
    conversation.rev += 1
    fields = ["rev", "updated_at", *extra]
    for name, value in extra.items():
        setattr(conversation, name, value)
    conversation.save(update_fields=fields)
    return conversation.rev


def create_conversation(owner: Any, *, title: str = "", system_prompt: str = "") -> Conversation:
    conversation = Conversation.objects.create(
        owner=owner, title=title.strip()[:TITLE_MAX], system_prompt=system_prompt
    )
    events.ring(conversation.pk, owner.pk)
    return conversation


def _clean(text: str) -> str:
    """Text from a form: NUL is not storable everywhere (PostgreSQL), so it never gets in."""
    return text.replace("\x00", "").strip()


def rename_conversation(conversation_id: int, title: str) -> Conversation:
    title = _clean(title)
    if not title:
        raise UserInputError("A title cannot be empty.")
    with transaction.atomic():
        conversation = lock(conversation_id)
        bump_rev(conversation, title=title[:TITLE_MAX])
        events.ring(conversation.pk, conversation.owner_id)
    return conversation


def delete_conversation(conversation_id: int) -> None:
    with transaction.atomic():
        conversation = lock(conversation_id)
        owner_id = conversation.owner_id
        conversation.delete()
        events.ring(conversation_id, owner_id)


def derive_title(text: str, *, limit: int = 60) -> str:
    """A title from the first user message: its first line, cut at a word boundary."""
    line = " ".join(text.strip().split("\n", 1)[0].split())
    if len(line) <= limit:
        return line
    cut = line[:limit].rsplit(" ", 1)[0] or line[:limit]
    return cut.rstrip(",.;:") + "…"


THINKING_BUDGET = 2048


def update_settings(conversation_id: int, *, system_prompt: str, thinking: bool) -> Conversation:
    system_prompt = _clean(system_prompt)
    if len(system_prompt) > 10_000:
        raise UserInputError("The system prompt is too long (10,000 characters at most).")
    with transaction.atomic():
        conversation = lock(conversation_id)
        bump_rev(
            conversation,
            system_prompt=system_prompt,
            thinking_budget=THINKING_BUDGET if thinking else None,
        )
        events.ring(conversation.pk, conversation.owner_id)
    return conversation
