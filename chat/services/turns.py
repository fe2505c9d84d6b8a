"""The turn lease and what a turn needs to know: one model turn at a time per conversation.

The lease is a pair of columns claimed with a conditional UPDATE, so it holds across server
processes; it expires if its holder dies without releasing it.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Exists, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from chat import compiled
from chat.modelapi import history
from chat.models import Conversation, Message, ToolPair
from chat.runtime import engine, events
from chat.services import budgets, config_cache, messages, pairing, policy
from chat.services.config_cache import Snapshot
from tools import config_generation

logger = logging.getLogger(__name__)


@compiled.update
def _claim(
    conversation_id: int, owner: str, now: dt.datetime, expires: dt.datetime
) -> tuple[QuerySet[Conversation], dict[str, object]]:
    free = Q(lease_owner="") | Q(lease_owner=owner) | Q(lease_expires_at__lt=now)
    claimable = Conversation.objects.filter(pk=conversation_id).filter(free)
    return claimable, {"lease_owner": owner, "lease_expires_at": expires}


def claim_lease(conversation_id: int, owner: str, *, seconds: float | None = None) -> bool:
    now = timezone.now()
    expires = now + dt.timedelta(seconds=seconds or settings.TANDEM_LEASE_SECONDS)
    return bool(_claim(conversation_id, owner, now, expires))


@compiled.update
def _renew(
    conversation_id: int, owner: str, expires: dt.datetime
) -> tuple[QuerySet[Conversation], dict[str, object]]:
    held = Conversation.objects.filter(pk=conversation_id, lease_owner=owner)
    return held, {"lease_expires_at": expires}


def renew_lease(conversation_id: int, owner: str) -> bool:
    expires = timezone.now() + dt.timedelta(seconds=settings.TANDEM_LEASE_SECONDS)
    return bool(_renew(conversation_id, owner, expires))


def release_lease(conversation_id: int, owner: str) -> None:
    Conversation.objects.filter(pk=conversation_id, lease_owner=owner).update(
        lease_owner="", lease_expires_at=None
    )


def _newest_user_seq(**filters: object) -> Subquery:
    """The seq of the conversation's newest user message, as a column of the same query."""
    newest = (
        Message.objects.filter(conversation_id=OuterRef("pk"), role=Message.Role.USER, **filters)
        .order_by("-seq")
        .values("seq")[:1]
    )
    return Subquery(newest, output_field=IntegerField())


def is_due(conversation_id: int) -> bool:
    """Something the model has not been asked about: a newer user turn or a finished pair."""
    row = (
        Conversation.objects.filter(pk=conversation_id)
        .annotate(newest_user=_newest_user_seq())
        .values_list("newest_user", "answered_seq")
        .first()
    )
    if row is None:
        return False
    newest_user, answered_seq = row
    if (newest_user or 0) > answered_seq:
        return True
    return pairing.ready_to_flush(conversation_id)


@compiled.update
def _release_if_idle(
    conversation_id: int, owner: str
) -> tuple[QuerySet[Conversation], dict[str, object]]:
    unflushed = ToolPair.objects.filter(
        conversation_id=OuterRef("pk"), flushed_at__isnull=True, finished_at__isnull=False
    )
    idle = (
        Conversation.objects.filter(pk=conversation_id, lease_owner=owner)
        .filter(~Exists(unflushed))
        .filter(answered_seq__gte=Coalesce(_newest_user_seq(), 0))
    )
    return idle, {"lease_owner": "", "lease_expires_at": None}


def release_if_idle(conversation_id: int, owner: str) -> bool:
    """Let go of the lease if nothing is due (``is_due``'s test, in the same UPDATE, so work
    that commits later finds the lease free). True when released; False when something is
    due (or the lease was lost): the caller runs the next turn, whose start looks again."""
    return bool(_release_if_idle(conversation_id, owner))


def finish_and_release(message_id: int, conversation_id: int, owner: str, **finish: Any) -> bool:
    """A reply's end, in one hop: store it (``messages.finish_reply``, its own transaction),
    then ``release_if_idle``; True when the lease was let go (nothing due)."""
    messages.finish_reply(message_id, **finish)
    return release_if_idle(conversation_id, owner)


def release_and_check(conversation_id: int, owner: str) -> bool:
    """Let go of the lease, then whether work arrived meanwhile (one hop for the runner)."""
    release_lease(conversation_id, owner)
    return is_due(conversation_id)


NO_SNAPSHOT = Snapshot(None)


@dataclass(frozen=True)
class TurnInput:
    conversation_id: int
    owner_id: int
    request: dict[str, object]
    last_seq: int
    config: Snapshot = NO_SNAPSHOT  # the configuration generation the turn was built at


@compiled.select
def _with_newest_user(conversation_id: int) -> QuerySet[Conversation]:
    return Conversation.objects.filter(pk=conversation_id).annotate(
        newest_user=_newest_user_seq(superseded=False),
        config_token=config_generation.token_subquery(),
    )[:1]


def load_turn_input(conversation_id: int) -> TurnInput | None:
    """The request for the next turn, or None when nothing waits for an answer."""
    # One query decides; the request (thread, calls, policies) is built only when it is due.
    # It also reads the configuration generation, so cached configuration costs no statement.
    conversation = _with_newest_user.one(conversation_id)
    if conversation is None:
        return None
    if (conversation.newest_user or 0) <= conversation.answered_seq:  # type: ignore[attr-defined]
        return None
    config = Snapshot(conversation.config_token)  # type: ignore[attr-defined]
    parts = request_parts(conversation, config=config)
    return TurnInput(
        conversation_id=conversation_id,
        owner_id=conversation.owner_id,
        request=history.build_request(parts.thread, parts.options, parts.pending),
        last_seq=parts.thread[-1].seq if parts.thread else 0,
        config=config,
    )


@dataclass(frozen=True)
class RequestParts:
    thread: list[history.StoredMessage]
    pending: list[history.PendingCall]
    options: history.RequestOptions


@compiled.select
def _thread_rows(conversation_id: int) -> QuerySet[Message, tuple[int, str, str, Any]]:
    return (
        Message.objects.filter(conversation_id=conversation_id, superseded=False)
        .exclude(role=Message.Role.NOTICE)
        .order_by("seq")
        .values_list("seq", "role", "kind", "content")
    )


@compiled.select
def _open_calls(conversation_id: int) -> QuerySet[ToolPair, tuple[str, str, str]]:
    return ToolPair.objects.filter(
        conversation_id=conversation_id, status__in=ToolPair.OPEN
    ).values_list("tool_use_id", "tool_name", "status")


def request_parts(conversation: Conversation, *, config: Snapshot | None = None) -> RequestParts:
    """What a request for this conversation is built from: the thread, open calls, options."""
    rows = _thread_rows(conversation.pk)
    thread = [history.StoredMessage(seq, role, kind, content) for seq, role, kind, content in rows]
    pending = [
        history.PendingCall(tool_use_id, name, status)
        for tool_use_id, name, status in _open_calls(conversation.pk)
    ]
    last_prompt = max((m.seq for m in thread if m.kind == Message.Kind.PROMPT), default=0)
    rounds, invalid = pairing.since_last_prompt(conversation.pk, last_prompt=last_prompt)
    next_round = rounds + 1
    allow_tools = not (
        pairing.round_cap_reached(next_round) or pairing.invalid_cap_reached(invalid)
    )
    config = config_cache.snapshot(config)
    schemas = config_cache.tool_schemas(config)
    # Only tools the owner may use are offered; every known tool still describes past calls.
    offered = policy.offered_names(conversation.owner_id, schemas.names, config=config)
    options = history.RequestOptions(
        model=conversation.model,
        max_tokens=settings.ANTHROPIC_MAX_TOKENS,
        system=conversation.system_prompt,
        tools=[schemas.by_name[name] for name in schemas.names if name in offered],
        known_tools=schemas.by_name,
        allow_tool_use=allow_tools,
        thinking_budget=conversation.thinking_budget,
        cache_ttl="1h" if settings.TANDEM_CACHE_STRATEGY == "1h" else "5m",
    )
    return RequestParts(thread, pending, options)


@dataclass(frozen=True)
class Turn:
    """A turn that began: the request to send and the streaming reply that answers it
    (``reply_id`` None: the owner is over budget and a notice answered instead)."""

    input: TurnInput
    reply_id: int | None


def post_and_begin(conversation_id: int, text: object) -> Message:
    """A user's message from a socket, in one database hop: store it (committed first, so it
    is kept whatever follows), then begin its turn right here when this process may
    (``engine.reserve``: no runner of its own answers the conversation), which spares the turn
    runner its first hop; otherwise kick the runner, as any stored change does. The hop's
    doorbells ring once, before the runner starts. Raises only what storing raises."""
    with events.one_bell():
        message = messages.post_user_message(conversation_id, text, kick=False)
        reserved = engine.reserve(conversation_id)
        try:
            begun = _begin_reserved(conversation_id) if reserved else None
        except BaseException:
            engine.release(conversation_id)
            raise
    if not reserved:
        engine.kick(conversation_id)
    elif begun is None or not engine.adopt(conversation_id, begun[0]):
        engine.release(conversation_id)  # and kick: the runner tries again, as it would have
    return message


def _begin_reserved(conversation_id: int) -> tuple[Turn | None] | None:
    """``claim_and_begin`` for the sender's hop: (the turn,) once claimed; None if another
    holder has the lease or it failed (logged: the message is stored all the same)."""
    try:
        claimed, turn = claim_and_begin(conversation_id, engine.INSTANCE_ID)
    except Exception:
        logger.exception("conversation %s: its turn did not begin after a message", conversation_id)
        return None
    return (turn,) if claimed else None


def claim_and_begin(conversation_id: int, owner: str) -> tuple[bool, Turn | None]:
    """``claim_lease``, then ``begin_turn`` if it was claimed: the runner's first hop. (False,
    None) when another holder has the lease; a failure to begin lets the lease go again."""
    if not claim_lease(conversation_id, owner):
        return False, None
    try:
        return True, begin_turn(conversation_id)
    except BaseException:
        release_lease(conversation_id, owner)
        raise


def begin_turn(conversation_id: int) -> Turn | None:
    """All a turn starts with, in one call (one hop to the database thread): flush finished
    tool pairs, build the request when something waits, check the owner's budget, open the
    streaming reply. None when nothing waits. Call only while holding the turn lease."""
    if pairing.has_unflushed(conversation_id):
        pairing.flush_ready(conversation_id)
    turn = load_turn_input(conversation_id)
    if turn is None:
        return None
    # The budget is read first without a transaction; the refusal re-checks under the lock.
    over = budgets.exhausted(turn.owner_id, config=turn.config)
    if over is not None and budgets.refuse_if_over_budget(conversation_id, turn.last_seq):
        return Turn(turn, None)
    reply = messages.start_reply(conversation_id, turn.last_seq)
    return Turn(turn, reply.pk)
