"""chat.usage_models: records from the API's usage, the month, spend and budget state."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Group

from chat.models import GroupBudget, UsageRecord
from chat.usage_models import month_start

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("price_table")]


def test_the_month_starts_on_the_first_at_midnight() -> None:
    now = dt.datetime(2026, 11, 23, 6, 30, tzinfo=dt.UTC)
    assert month_start(now) == dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def test_fields_come_from_the_api_usage_with_the_lifetime_split() -> None:
    usage = {
        "input_tokens": 1,
        "output_tokens": 2,
        "cache_read_input_tokens": 3,
        "cache_creation_input_tokens": 10,
        "cache_creation": {"ephemeral_5m_input_tokens": 4, "ephemeral_1h_input_tokens": 6},
    }
    assert UsageRecord.fields_from_usage(usage) == {
        "input_tokens": 1,
        "output_tokens": 2,
        "cache_read_tokens": 3,
        "cache_write_5m_tokens": 4,
        "cache_write_1h_tokens": 6,
    }


def test_spend_prices_each_model_and_names_the_unpriced(owner: Any) -> None:
    UsageRecord.objects.create(user=owner, model="claude-haiku-5-5", output_tokens=1_000_000)
    UsageRecord.objects.create(user=owner, model="claude-sonnet-5-5", cache_write_1h_tokens=10**6)
    UsageRecord.objects.create(user=owner, model="mystery", input_tokens=5)
    spend = UsageRecord.objects.spend()
    assert (spend.cost, spend.unpriced, spend.counts.total) == (Decimal(11), ("mystery",), 2000005)


def test_budget_state_takes_the_fuller_of_its_two_limits(owner: Any) -> None:
    group = Group.objects.create(name="Ops")
    group.user_set.add(owner)
    budget = GroupBudget.objects.create(group=group, monthly_tokens=10**7, monthly_cost=Decimal(4))
    UsageRecord.objects.create(user=owner, model="claude-sonnet-5-5", input_tokens=10**6)
    state = budget.state()
    assert (round(state.percent), state.near, state.over) == (75, False, False)
