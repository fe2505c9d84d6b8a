"""The sidebar: a user's conversations with their live state (replying, tools, approvals)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Exists, OuterRef, Q, QuerySet

from chat import compiled
from chat.models import Conversation, Message, ToolPair

LIMIT = 100


def for_user(user_id: int) -> QuerySet[Conversation]:
    streaming = Message.objects.filter(conversation=OuterRef("pk"), status=Message.Status.STREAMING)
    return (
        Conversation.objects.filter(owner_id=user_id)
        .annotate(
            is_streaming=Exists(streaming),
            tools_running=Count(
                "tool_pairs",
                filter=Q(tool_pairs__status__in=ToolPair.PENDING_RUN),
            ),
            awaiting_approval=Count(
                "tool_pairs", filter=Q(tool_pairs__status=ToolPair.Status.AWAITING_APPROVAL)
            ),
        )
        .order_by("-updated_at")[:LIMIT]
    )


# Read on every doorbell of the user's list: compiled once (chat/compiled.py).
_for_user = compiled.select(for_user)


def context(user_id: int, current: int | None = None) -> dict[str, Any]:
    return {"conversations": _for_user(user_id), "current_id": current}
