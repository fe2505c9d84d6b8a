"""Monthly group budgets: a user over budget gets a clear notice instead of a model call.

What the user wrote is already stored (``messages.post_user_message``); the refusal marks it
answered, so nothing is sent to the model until staff raise the budget or the month ends, and
the next message is checked again.
"""

from __future__ import annotations

import datetime as dt

from django.db import transaction
from django.utils import timezone

from chat.models import Message
from chat.runtime import events
from chat.services import config_cache
from chat.services.config_cache import Snapshot
from chat.services.conversations import lock
from chat.services.messages import append
from chat.usage_models import BudgetState, month_start


def states_for_user(
    user_id: int, now: dt.datetime | None = None, *, config: Snapshot | None = None
) -> list[BudgetState]:
    """The budget of each of the user's groups that has one, fullest first.

    Which budgets apply comes from the configuration cache; what was spent is summed afresh.
    """
    config = config_cache.snapshot(config)
    by_group = config_cache.budgets_by_group(config)
    groups = sorted(config_cache.group_ids_of(user_id, config) & by_group.keys())
    return sorted((by_group[g].state(now) for g in groups), key=lambda s: -s.percent)


def exhausted(
    user_id: int, now: dt.datetime | None = None, *, config: Snapshot | None = None
) -> BudgetState | None:
    """The first of the user's group budgets that is used up, if any."""
    return next((s for s in states_for_user(user_id, now, config=config) if s.over), None)


def _next_month(now: dt.datetime) -> dt.datetime:
    start = month_start(now)
    return (start + dt.timedelta(days=32)).replace(day=1)


def refusal_text(state: BudgetState, now: dt.datetime | None = None) -> str:
    budget, spend = state.budget, state.spend
    limits = []
    if budget.monthly_cost:
        limits.append(f"${spend.cost:,.2f} of ${budget.monthly_cost:,.2f}")
    if budget.monthly_tokens:
        limits.append(f"{spend.counts.total:,} of {budget.monthly_tokens:,} tokens")
    resets = _next_month(now or timezone.now())
    return (
        f"Not sent to Claude: your group “{budget.group.name}” has used its monthly budget "
        f"({'; '.join(limits)}). Your message is saved. The budget resets on "
        f"{resets:%-d %B %Y}; staff can raise it sooner."
    )


def refuse_if_over_budget(conversation_id: int, answered_seq: int) -> bool:
    """True when the owner is over budget: the turn is marked answered with a notice instead."""
    with transaction.atomic():
        conversation = lock(conversation_id)
        state = exhausted(conversation.owner_id)
        if state is None:
            return False
        conversation.answered_seq = max(conversation.answered_seq, answered_seq)
        conversation.save(update_fields=["answered_seq"])
        text = refusal_text(state)
        last = conversation.messages.order_by("-seq").first()
        if last is None or last.kind != Message.Kind.NOTICE or last.text != text:
            append(
                conversation,
                role=Message.Role.NOTICE,
                kind=Message.Kind.NOTICE,
                content=[{"type": "text", "text": text}],
            )
        events.ring(conversation_id, conversation.owner_id)
    return True
