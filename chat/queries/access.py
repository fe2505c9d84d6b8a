"""Who may see what: a conversation is visible to its owner only."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from django.shortcuts import get_object_or_404

from chat.models import Conversation, ToolPair


def owned_conversation(user: Any, conversation_id: int) -> Conversation | None:
    if not getattr(user, "is_authenticated", False):
        return None
    return Conversation.objects.filter(pk=conversation_id, owner_id=user.pk).first()


def get_owned_or_404(user: Any, conversation_id: int) -> Conversation:
    if not user.is_authenticated:
        raise Http404
    return get_object_or_404(Conversation, pk=conversation_id, owner_id=user.pk)


def owned_pair(user: Any, conversation_id: int, pair_id: object) -> ToolPair | None:
    if not isinstance(pair_id, int) or isinstance(pair_id, bool):
        return None
    return ToolPair.objects.filter(
        pk=pair_id, conversation_id=conversation_id, conversation__owner_id=user.pk
    ).first()
