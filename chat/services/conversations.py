"""Creating, renaming and deleting conversations, and bumping their change counter."""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from chat import compiled
from chat.models import Conversation, Message, ToolPair
from chat.runtime import engine, events
from chat.services.errors import ConversationGone, UserInputError

TITLE_MAX = 200


@compiled.select
def _locked(conversation_id: int) -> QuerySet[Conversation]:
    return Conversation.objects.select_for_update().filter(pk=conversation_id)[:1]


def lock(conversation_id: int) -> Conversation:
    """Lock the conversation row for the rest of the transaction (seq and rev allocation).

    Raises ``ConversationGone`` (a ``Conversation.DoesNotExist``) when it was deleted.
    """
    if connection.features.has_select_for_update and transaction.get_autocommit():
        # As the ORM says it on every call; the compiled statement checks only when compiled.
        raise transaction.TransactionManagementError("lock() needs a transaction.")
    conversation = _locked.one(conversation_id)
    if conversation is None:
        raise ConversationGone(f"Conversation {conversation_id} was deleted.")
    return conversation


# bump_rev's UPDATE, compiled once per set of columns it writes (a handful exist).
_bumps: dict[tuple[str, ...], compiled.Update] = {}


def _bump(names: tuple[str, ...], values: dict[str, Any]) -> compiled.Update:
    statement = _bumps.get(names)
    if statement is None:

        def build(**new: Any) -> tuple[QuerySet[Conversation], dict[str, Any]]:
            pk = new.pop("conversation_id")
            return Conversation.objects.filter(pk=pk), new

        kinds = {"conversation_id": int, **{n: type(values[n]) for n in names}}
        statement = _bumps[names] = compiled.Update(build, kinds)
    return statement


def bump_rev(conversation: Conversation, **extra: Any) -> int:
    """Give the locked conversation a new revision; returns it."""
    conversation.rev += 1
    conversation.updated_at = timezone.now()
    for name, value in extra.items():
        setattr(conversation, name, value)
    names = ("rev", "updated_at", *sorted(extra))
    values = {name: getattr(conversation, name) for name in names}
    if all(compiled.markable(v) for v in values.values()):
        if not _bump(names, values)(conversation_id=conversation.pk, **values):
            raise ConversationGone(f"Conversation {conversation.pk} was deleted.")
    else:  # a value a compiled statement cannot carry (None): the ORM's save
        conversation.save(update_fields=names)
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
    """Delete a conversation, stopping its streaming reply and its running tools first.

    Nothing is recorded on the reply or the calls (they go with the conversation): after
    commit the stream and the tools running in this process are cancelled at once; elsewhere
    a stream stops at its next snapshot (its reply is gone) and a tool's late result finds
    no pair. Work that meets the deleted rows stops quietly (``ConversationGone``).
    """
    with transaction.atomic():
        conversation = lock(conversation_id)
        owner_id = conversation.owner_id
        replies = list(
            conversation.messages.filter(status=Message.Status.STREAMING).values_list(
                "pk", flat=True
            )
        )
        tools = list(
            ToolPair.objects.filter(
                conversation_id=conversation_id,
                status__in=ToolPair.PENDING_RUN,
            ).values_list("tool_use_id", flat=True)
        )
        conversation.delete()
        events.ring(conversation_id, owner_id)

        def stop_work() -> None:
            for message_id in replies:
                engine.stop_reply(message_id)
            for tool_use_id in tools:
                engine.cancel_tool(tool_use_id)

        transaction.on_commit(stop_work)


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
