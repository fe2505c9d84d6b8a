"""chat.queries.usage: the report's rows and totals, conversation totals, near-limit groups."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from chat.models import Conversation, GroupBudget, UsageRecord
from chat.queries import usage

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("price_table")]

SONNET, HAIKU = "claude-sonnet-5-5", "claude-haiku-5-5"


def use(user: Any, model: str = SONNET, *, days_ago: int = 0, **tokens: int) -> UsageRecord:
    when = timezone.now() - dt.timedelta(days=days_ago)
    return UsageRecord.objects.create(user=user, model=model, created_at=when, **tokens)


@pytest.fixture
def usage_rows(owner: Any, outsider: Any) -> None:
    Group.objects.create(name="Research").user_set.add(owner)
    use(owner, input_tokens=1_000_000)  # $3
    use(owner, HAIKU, output_tokens=200_000)  # $1
    use(outsider, cache_read_tokens=1_000_000, days_ago=1)  # $0.30
    use(outsider, "claude-unknown", input_tokens=10, days_ago=1)


def by_key(rows: list[usage.ReportRow]) -> dict[str, tuple[int, Decimal]]:
    return {row.key: (row.counts.total, row.cost) for row in rows}


def test_it_sums_by_user_with_costs_from_the_price_table(usage_rows: None) -> None:
    rows, totals = usage.report(usage.Filters(), "user")
    assert by_key(rows) == {
        "outsider": (1_000_010, Decimal("0.3")),
        "owner": (1_200_000, Decimal("4")),
    }
    assert (totals.counts.total, totals.cost) == (2_200_010, Decimal("4.3"))
    assert totals.unpriced == ("claude-unknown",)


def test_it_sums_by_model_group_and_day(usage_rows: None) -> None:
    assert by_key(usage.report(usage.Filters(), "model")[0])[HAIKU] == (200_000, Decimal(1))
    groups = by_key(usage.report(usage.Filters(), "group")[0])
    assert groups == {
        "(no group)": (1_000_010, Decimal("0.3")),
        "Research": (1_200_000, Decimal("4")),
    }
    days = usage.report(usage.Filters(), "day")[0]
    assert [row.counts.total for row in days] == [1_200_000, 1_000_010]  # newest first


def test_it_filters_by_user_group_model_and_dates(usage_rows: None) -> None:
    today = timezone.localdate()
    assert usage.report(usage.Filters(user="owner"), "user")[1].counts.total == 1_200_000
    assert usage.report(usage.Filters(group="Research"), "user")[1].cost == Decimal(4)
    assert usage.report(usage.Filters(model=HAIKU), "user")[1].counts.output == 200_000
    assert usage.report(usage.Filters(start=today), "user")[1].counts.total == 1_200_000
    yesterday = today - dt.timedelta(days=1)
    assert usage.report(usage.Filters(end=yesterday), "user")[1].counts.total == 1_000_010


def test_conversation_totals_count_only_that_conversation(
    owner: Any, conversation: Conversation
) -> None:
    other = Conversation.objects.create(owner=owner)
    UsageRecord.objects.create(user=owner, conversation=conversation, model=SONNET, output_tokens=7)
    UsageRecord.objects.create(user=owner, conversation=other, model=SONNET, output_tokens=9)
    totals = usage.conversation_totals(conversation)
    assert (totals.counts.output, totals.cost) == (7, Decimal("0.000105"))


def test_near_limit_lists_groups_past_their_warning_with_each_member(
    owner: Any, outsider: Any
) -> None:
    near = Group.objects.create(name="Near")
    near.user_set.add(owner, outsider)
    GroupBudget.objects.create(group=near, monthly_cost=Decimal("5.00"), warn_percent=50)
    calm = Group.objects.create(name="Calm")
    GroupBudget.objects.create(group=calm, monthly_cost=Decimal("100.00"))
    use(owner, input_tokens=1_000_000)  # $3 of $5: 60%
    [entry] = usage.near_limit()
    assert entry.state.budget.group.name == "Near" and round(entry.state.percent) == 60
    assert [(name, spend.cost) for name, spend in entry.members] == [
        ("owner", Decimal(3)),
        ("outsider", Decimal(0)),
    ]
