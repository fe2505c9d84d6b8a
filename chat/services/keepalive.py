"""Keeping the prompt cache warm while tools run: which conversations are due, and the claim.

A keep-alive is a model request that is never stored in the thread (its usage is recorded as
a ``keepalive`` usage record) and is never sent while nothing pends. When one pays is decided
in ``chat.billing.cache_plan``; this module applies it to the database.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.utils import timezone

from chat.billing import cache_plan
from chat.modelapi import history
from chat.models import Conversation, ToolPair, UsageRecord
from chat.services import usage
from chat.services.turns import request_parts


def enabled() -> bool:
    return bool(settings.TANDEM_CACHE_STRATEGY == "keepalive")


def due(now: dt.datetime | None = None) -> list[int]:
    """Conversations whose cache is about to expire while a tool pends and no turn runs."""
    if not enabled():
        return []
    now = now or timezone.now()
    window_start = now - dt.timedelta(seconds=cache_plan.TTL_S)
    window_end = now - dt.timedelta(seconds=cache_plan.TTL_S - cache_plan.MARGIN_S)
    candidates = (
        Conversation.objects.filter(
            lease_owner="",
            last_request_at__gt=window_start,
            last_request_at__lte=window_end,
            keepalives_sent__lt=cache_plan.max_keepalives(),
            tool_pairs__status__in=ToolPair.OPEN,
        )
        .distinct()
        .values_list("pk", "last_request_at", "keepalives_sent")
    )
    return [
        pk
        for pk, last, sent in candidates
        if cache_plan.keepalive_due(
            now=now.timestamp(),
            last_request_at=last.timestamp() if last else None,
            tools_pending=True,
            sent=sent,
        )
    ]


def claim(conversation_id: int, now: dt.datetime | None = None) -> dict[str, Any] | None:
    """The keep-alive request, claimed for this process (None: not due any more, another
    process took it, or nothing pends). The cache's lifetime now runs from ``now``."""
    if conversation_id not in due(now):
        return None
    conversation = Conversation.objects.get(pk=conversation_id)
    parts = request_parts(conversation)
    request = history.build_keepalive_request(parts.thread, parts.options, parts.pending)
    if request is None:
        return None
    claimed = Conversation.objects.filter(
        pk=conversation_id,
        lease_owner="",
        last_request_at=conversation.last_request_at,
        keepalives_sent=conversation.keepalives_sent,
    ).update(
        last_request_at=now or timezone.now(), keepalives_sent=conversation.keepalives_sent + 1
    )
    return request if claimed else None


def give_up(conversation_id: int) -> None:
    """A keep-alive failed: no more for this wait (the next real request starts afresh)."""
    Conversation.objects.filter(pk=conversation_id).update(
        keepalives_sent=cache_plan.max_keepalives()
    )


def record(conversation_id: int, usage_json: dict[str, Any]) -> UsageRecord | None:
    conversation = Conversation.objects.filter(pk=conversation_id).first()
    if conversation is None:
        return None
    return usage.record(conversation, usage_json, kind=UsageRecord.Kind.KEEPALIVE)
