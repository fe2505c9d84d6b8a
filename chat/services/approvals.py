"""People deciding on tool calls: approve or deny a held call, retry a failed one.

Who may decide on a held call was recorded when it was stored (``pair.decision``, see
``chat.services.policy``): the conversation owner for "awaiting owner approval", staff holding
the ``chat.decide_toolpair`` permission (superusers hold every permission) for "awaiting staff
approval". Anyone else is refused with ``NotAllowed`` and the attempt is logged. The same rule
holds on every path (admin actions, the chat socket), since they all come here. Every change
bumps the conversation's rev and rings its doorbell after commit, so an open chat shows it at
once; an approved or retried call is enqueued after commit.

Rows are locked conversation first, then pair, the order ``pairing.flush_ready`` uses.
"""

from __future__ import annotations

import logging
from typing import Any, NoReturn

from django.db import transaction
from django.utils import timezone

from chat.models import Conversation, ToolPair
from chat.runtime import events
from chat.services import pairing, policy
from chat.services.conversations import bump_rev
from chat.services.errors import NotAllowed, UserInputError

logger = logging.getLogger(__name__)

NOTE_MAX = 1000


def _name(user: Any) -> str:
    return str(user.get_username()) if user is not None else "nobody"


DECIDE_PERMISSION = "chat.decide_toolpair"


def is_staff(user: Any) -> bool:
    return bool(getattr(user, "is_authenticated", False) and user.is_active and user.is_staff)


def may_decide_for_staff(user: Any) -> bool:
    """Active staff granted the permission to approve or deny calls held for staff."""
    return is_staff(user) and bool(user.has_perm(DECIDE_PERMISSION))


def may_decide(pair: ToolPair, owner_id: int, user: Any) -> bool:
    """Whether ``user`` may approve or deny this held call."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if pair.decision == policy.AWAITING_OWNER:
        return bool(user.pk == owner_id)
    if pair.decision == policy.AWAITING_STAFF:
        return may_decide_for_staff(user)
    return False


def _refuse(pair_id: int, user: Any, what: str) -> NoReturn:
    logger.warning("Refused: user %r may not %s tool call %s.", _name(user), what, pair_id)
    raise NotAllowed(f"You may not {what} that tool call.")


def _held(
    pair_id: int, user: Any, what: str, conversation_id: int | None
) -> tuple[ToolPair, Conversation]:
    """The locked held pair ``user`` may decide on; refuses and logs everyone else."""
    locked = pairing.lock_pair(pair_id)
    if locked is None:
        _refuse(pair_id, user, what)
    pair, conversation = locked
    owner_id = conversation.owner_id
    if conversation_id is not None and pair.conversation_id != conversation_id:
        _refuse(pair_id, user, what)
    if pair.status != ToolPair.Status.AWAITING_APPROVAL:
        if getattr(user, "pk", None) == owner_id or is_staff(user):
            raise UserInputError("That tool call is not waiting for approval any more.")
        _refuse(pair_id, user, what)
    if not may_decide(pair, owner_id, user):
        _refuse(pair_id, user, what)
    return pair, conversation


def approve(pair_id: int, by_user: Any, *, conversation_id: int | None = None) -> ToolPair:
    """Let a held call run: queued now, its run timeout counted from now (unless the policy
    counts the wait toward the timeout, then the original deadline stands)."""
    with transaction.atomic():
        pair, conversation = _held(pair_id, by_user, "approve", conversation_id)
        view = policy.policy_for(pair.tool_name)
        now = timezone.now()
        if not view.approval_counts_toward_timeout or pair.deadline_at is None:
            pair.start_clock(policy.run_timeout_s(view), now=now)
        pair.decision = "approved"
        pair.decided_by = by_user
        pair.decided_at = now
        pair.move_to(ToolPair.Status.QUEUED, f"approved by {_name(by_user)}", now=now)
        pair.rev = bump_rev(conversation)
        pair.save()
        events.ring(pair.conversation_id, conversation.owner_id)
        transaction.on_commit(lambda: pairing.enqueue_run(pair_id))
    return pair


def deny(
    pair_id: int, by_user: Any, note: str = "", *, conversation_id: int | None = None
) -> ToolPair:
    """Answer a held call with an error result the model reads: "Denied by <name>: <note>"."""
    note = " ".join(str(note or "").split())[:NOTE_MAX]
    who = _name(by_user)
    with transaction.atomic():
        _held(pair_id, by_user, "deny", conversation_id)
        denied = pairing.finish(
            pair_id,
            status=ToolPair.Status.DENIED,
            content=f"Denied by {who}: {note}" if note else f"Denied by {who}.",
            is_error=True,
            event=f"denied by {who}",
            allowed_from=frozenset({ToolPair.Status.AWAITING_APPROVAL}),
            decision="denied",
            decided_by=by_user,
            decided_at=timezone.now(),
            decision_note=note,
        )
    if denied is None:  # cannot happen under the lock; kept for the type checker
        raise UserInputError("That tool call is not waiting for approval any more.")
    return denied


def can_retry(pair: ToolPair) -> bool:
    """A call that ran and failed, whose result the model has not been handed yet."""
    return pair.status == ToolPair.Status.FAILED and pair.attempts > 0 and not pair.flushed_at


def retry(pair_id: int, by_user: Any) -> ToolPair:
    """Staff only: run a failed, unflushed call again (its attempts are kept)."""
    if not is_staff(by_user):
        _refuse(pair_id, by_user, "retry")
    with transaction.atomic():
        locked = pairing.lock_pair(pair_id)
        if locked is None or not can_retry(locked[0]):
            raise UserInputError(
                "Only a call that ran and failed, and whose result has not been handed to the "
                "model yet, can be retried."
            )
        pair, conversation = locked
        pair.start_clock(policy.run_timeout_s(policy.policy_for(pair.tool_name)))
        pair.move_to(
            ToolPair.Status.QUEUED,
            f"retried by {_name(by_user)}",
            attempts_so_far=pair.attempts,
        )
        pair.rev = bump_rev(conversation)
        pair.save()
        events.ring(pair.conversation_id, conversation.owner_id)
        transaction.on_commit(lambda: pairing.enqueue_run(pair_id))
    return pair
