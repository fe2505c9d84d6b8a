"""Reading usage: a conversation's totals, the admin report, and who is near a budget."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from django.db.models import F, Sum
from django.db.models.functions import TruncDate

from chat.billing.pricing import Price, TokenCounts, cost
from chat.models import Conversation, GroupBudget, UsageRecord
from chat.usage_models import TOKEN_FIELDS, BudgetState, Spend, counts_of, month_start, prices

GroupBy = Literal["user", "group", "model", "day"]
GROUP_BY: dict[str, Any] = {
    "user": F("user__username"),
    "group": F("user__groups__name"),
    "model": F("model"),
    "day": TruncDate("created_at"),
}
NO_GROUP = "(no group)"


def conversation_totals(conversation: Conversation) -> Spend:
    """Everything the conversation's requests used (keep-alives included) and its cost."""
    return UsageRecord.objects.filter(conversation=conversation).spend()


@dataclass(frozen=True)
class Filters:
    start: dt.date | None = None
    end: dt.date | None = None  # inclusive
    user: str = ""
    group: str = ""
    model: str = ""


@dataclass
class ReportRow:
    key: str
    counts: TokenCounts = field(default_factory=TokenCounts)
    cost: Decimal = Decimal(0)
    unpriced: set[str] = field(default_factory=set)


def filtered(filters: Filters) -> Any:
    records = UsageRecord.objects.all()
    if filters.start:
        records = records.filter(created_at__date__gte=filters.start)
    if filters.end:
        records = records.filter(created_at__date__lte=filters.end)
    if filters.user:
        records = records.filter(user__username=filters.user)
    if filters.group:
        records = records.filter(user__groups__name=filters.group)
    if filters.model:
        records = records.filter(model=filters.model)
    return records


def report(filters: Filters, group_by: GroupBy) -> tuple[list[ReportRow], Spend]:
    """One row per user, group, model or day, and the totals (a user in two groups counts in
    both groups' rows, once in the totals)."""
    table: dict[str, Price] = prices()
    rows: dict[str, ReportRow] = {}
    grouped = (
        filtered(filters)
        .order_by()
        .annotate(key=GROUP_BY[group_by])
        .values("key", "model")
        .annotate(**{name: Sum(name) for name in TOKEN_FIELDS})
    )
    for item in grouped:
        key = NO_GROUP if item["key"] is None else str(item["key"])
        row = rows.setdefault(key, ReportRow(key))
        counts = counts_of(item)
        row.counts += counts
        if item["model"] in table:
            row.cost += cost(counts, table[item["model"]])
        elif counts.total:
            row.unpriced.add(item["model"])
    ordered = sorted(rows.values(), key=lambda r: r.key, reverse=group_by == "day")
    return ordered, filtered(filters).spend(table)


@dataclass(frozen=True)
class NearLimit:
    state: BudgetState
    members: list[tuple[str, Spend]]


def near_limit(now: dt.datetime | None = None) -> list[NearLimit]:
    """Groups at or past their warning share this month, with each member's own spending."""
    out = []
    start = month_start(now)
    for budget in GroupBudget.objects.select_related("group").order_by("group__name"):
        state = budget.state(now)
        if not state.near:
            continue
        members = [
            (user.get_username(), UsageRecord.objects.filter(user=user).since(start).spend())
            for user in budget.group.user_set.order_by("username")
        ]
        members.sort(key=lambda m: -m[1].cost)
        out.append(NearLimit(state, members))
    return out
