"""The turn lease and what a turn needs to know: one model turn at a time per conversation.

The lease is a pair of columns claimed with a conditional UPDATE, so it holds across server
processes; it expires if its holder dies without releasing it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Max, Q
from django.utils import timezone

from chat.modelapi import history
from chat.models import Conversation, Message, ToolPair
from chat.services import budgets, messages, pairing, policy
from tools.registry import registry


def claim_lease(conversation_id: int, owner: str, *, seconds: float | None = None) -> bool:
    now = timezone.now()
    expires = now + dt.timedelta(seconds=seconds or settings.TANDEM_LEASE_SECONDS)
    return bool(
        Conversation.objects.filter(pk=conversation_id)
        .filter(Q(lease_owner="") | Q(lease_owner=owner) | Q(lease_expires_at__lt=now))
        .update(lease_owner=owner, lease_expires_at=expires)
    )


def renew_lease(conversation_id: int, owner: str) -> bool:
    expires = timezone.now() + dt.timedelta(seconds=settings.TANDEM_LEASE_SECONDS)
    return bool(
        Conversation.objects.filter(pk=conversation_id, lease_owner=owner).update(
            lease_expires_at=expires
        )
    )


def release_lease(conversation_id: int, owner: str) -> None:
    Conversation.objects.filter(pk=conversation_id, lease_owner=owner).update(
        lease_owner="", lease_expires_at=None
    )


def is_due(conversation_id: int) -> bool:
    """Something the model has not been asked about: a newer user turn or a finished pair."""
    conversation = Conversation.objects.filter(pk=conversation_id).first()
    if conversation is None:
        return False
    newest_user = (
        conversation.messages.filter(role=Message.Role.USER).aggregate(m=Max("seq"))["m"] or 0
    )
    if newest_user > conversation.answered_seq:
        return True
    return pairing.ready_to_flush(conversation_id)


@dataclass(frozen=True)
class TurnInput:
    conversation_id: int
    owner_id: int
    request: dict[str, object]
    last_seq: int


def load_turn_input(conversation_id: int) -> TurnInput | None:
    """The request for the next turn, or None when nothing waits for an answer."""
    conversation = Conversation.objects.filter(pk=conversation_id).first()
    if conversation is None:
        return None
    # One query decides; the request (thread, calls, policies) is built only when it is due.
    newest_user = (
        conversation.messages.filter(superseded=False, role=Message.Role.USER).aggregate(
            m=Max("seq")
        )["m"]
        or 0
    )
    if newest_user <= conversation.answered_seq:
        return None
    parts = request_parts(conversation)
    return TurnInput(
        conversation_id=conversation_id,
        owner_id=conversation.owner_id,
        request=history.build_request(parts.thread, parts.options, parts.pending),
        last_seq=parts.thread[-1].seq if parts.thread else 0,
    )


@dataclass(frozen=True)
class RequestParts:
    thread: list[history.StoredMessage]
    pending: list[history.PendingCall]
    options: history.RequestOptions


def request_parts(conversation: Conversation) -> RequestParts:
    """What a request for this conversation is built from: the thread, open calls, options."""
    rows = (
        conversation.messages.filter(superseded=False)
        .exclude(role=Message.Role.NOTICE)
        .order_by("seq")
        .values_list("seq", "role", "kind", "content")
    )
    thread = [history.StoredMessage(seq, role, kind, content) for seq, role, kind, content in rows]
    pending = [
        history.PendingCall(tool_use_id, name, status)
        for tool_use_id, name, status in ToolPair.objects.filter(
            conversation_id=conversation.pk, status__in=ToolPair.OPEN
        ).values_list("tool_use_id", "tool_name", "status")
    ]
    rounds, invalid = pairing.since_last_prompt(conversation.pk)
    next_round = rounds + 1
    allow_tools = not (
        pairing.round_cap_reached(next_round) or pairing.invalid_cap_reached(invalid)
    )
    specs = registry.all()
    # Only tools the owner may use are offered; every known tool still describes past calls.
    offered = policy.offered_names(conversation.owner_id, [s.name for s in specs])
    options = history.RequestOptions(
        model=conversation.model,
        max_tokens=settings.ANTHROPIC_MAX_TOKENS,
        system=conversation.system_prompt,
        tools=[s.anthropic_schema() for s in specs if s.name in offered],
        known_tools={s.name: s.anthropic_schema() for s in specs},
        allow_tool_use=allow_tools,
        thinking_budget=conversation.thinking_budget,
        cache_ttl="1h" if settings.TANDEM_CACHE_STRATEGY == "1h" else "5m",
    )
    return RequestParts(thread, pending, options)


@dataclass(frozen=True)
class PreparedTurn:
    """What the runner streams next: the request and the reply opened for it."""

    request: dict[str, object]
    reply_id: int


def prepare_turn(conversation_id: int) -> PreparedTurn | bool:
    """Everything before a model call in one go (one trip to the database thread, which the
    continuation after a tool waits for): flush finished pairs, build the request, check the
    budget, open the reply. False: nothing waits; True: answered by a budget notice instead.

    Call only while holding the conversation's turn lease.
    """
    pairing.flush_ready(conversation_id)
    turn = load_turn_input(conversation_id)
    if turn is None:
        return False
    if budgets.refuse_if_over_budget(conversation_id, turn.last_seq):
        return True  # a notice instead of a model call; the user's message stays stored
    reply = messages.start_reply(conversation_id, turn.last_seq)
    return PreparedTurn(turn.request, reply.pk)
