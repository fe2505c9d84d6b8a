"""chat.services.budgets: over its group's monthly budget, a message is stored and answered by
a clear notice, and no model request is made."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from channels.db import database_sync_to_async as db
from django.contrib.auth.models import Group
from django.utils import timezone

from chat.modelapi import client as model_client
from chat.models import Conversation, GroupBudget, Message, UsageRecord
from chat.runtime import engine
from chat.services import budgets, messages

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("price_table")]


def team_with_budget(user: Any, **limits: Any) -> GroupBudget:
    group = Group.objects.create(name="Research")
    group.user_set.add(user)
    return GroupBudget.objects.create(group=group, **limits)


def spent(user: Any, *, output: int, when: dt.datetime | None = None) -> UsageRecord:
    """Usage on the default model: output tokens at $15 per million."""
    return UsageRecord.objects.create(
        user=user,
        model="claude-sonnet-5-5",
        output_tokens=output,
        created_at=when or timezone.now(),
    )


async def kinds(conversation: Conversation) -> list[str]:
    return [m.kind async for m in conversation.messages.order_by("seq")]


async def test_over_budget_the_message_is_stored_and_no_model_request_is_made(
    running_engine: None, owner: Any, conversation: Conversation
) -> None:
    await db(team_with_budget)(owner, monthly_cost="0.10")
    await db(spent)(owner, output=10_000)  # $0.15
    before = model_client.simulator().stats.requests
    await db(messages.post_user_message)(conversation.pk, "please summarise this")
    await engine.idle()
    assert await kinds(conversation) == ["prompt", "notice"]
    assert model_client.simulator().stats.requests == before
    prompt = await conversation.messages.aget(kind=Message.Kind.PROMPT)
    notice = await conversation.messages.aget(kind=Message.Kind.NOTICE)
    assert prompt.text == "please summarise this"
    assert notice.text.startswith("Not sent to Claude: your group “Research” has used its")
    assert "($0.15 of $0.10)" in notice.text and "Your message is saved." in notice.text


async def test_under_budget_the_model_answers(
    running_engine: None, owner: Any, conversation: Conversation
) -> None:
    await db(team_with_budget)(owner, monthly_cost="1.00", monthly_tokens=1_000_000)
    await db(spent)(owner, output=10_000)
    await db(messages.post_user_message)(conversation.pk, "hello")
    await engine.idle()
    assert await kinds(conversation) == ["prompt", "reply"]


def test_a_token_budget_counts_every_token_and_says_so(owner: Any) -> None:
    team_with_budget(owner, monthly_tokens=5_000)
    spent(owner, output=5_000)
    state = budgets.exhausted(owner.pk)
    assert state is not None
    assert "(5,000 of 5,000 tokens)" in budgets.refusal_text(state)


def test_last_months_usage_does_not_count(owner: Any) -> None:
    team_with_budget(owner, monthly_tokens=5_000)
    first_of_month = timezone.now().replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    spent(owner, output=50_000, when=first_of_month - dt.timedelta(seconds=1))
    assert budgets.exhausted(owner.pk) is None


def test_a_group_spends_together_and_warns_before_the_limit(owner: Any, outsider: Any) -> None:
    budget = team_with_budget(owner, monthly_tokens=10_000, warn_percent=80)
    budget.group.user_set.add(outsider)
    spent(owner, output=4_000)
    spent(outsider, output=4_500)
    state = budget.state()
    assert (state.near, state.over, round(state.percent)) == (True, False, 85)
    spent(outsider, output=1_500)
    assert budgets.exhausted(owner.pk) is not None


def test_a_user_without_a_budgeted_group_is_never_refused(owner: Any) -> None:
    spent(owner, output=10_000_000)
    assert budgets.exhausted(owner.pk) is None
