"""Usage, prices and budgets: what each model request consumed and what a group may spend.

Imported by ``chat.models`` (models refer to the conversation side by name, so nothing here
imports it back).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.db.models import Sum
from django.utils import timezone

from chat.billing.pricing import Price, TokenCounts, cost, counts_from_usage
from tools.config_generation import GenerationQuerySet

TOKEN_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_5m_tokens",
    "cache_write_1h_tokens",
)


def month_start(now: dt.datetime | None = None) -> dt.datetime:
    """The first instant of the current calendar month (in the project's time zone)."""
    local = timezone.localtime(now or timezone.now())
    return local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def counts_of(row: Mapping[str, Any]) -> TokenCounts:
    return TokenCounts(*(int(row.get(name) or 0) for name in TOKEN_FIELDS))


@dataclass(frozen=True)
class Spend:
    """Summed usage and its estimated cost; ``unpriced`` names models missing from the table."""

    counts: TokenCounts
    cost: Decimal
    unpriced: tuple[str, ...] = ()


def prices() -> dict[str, Price]:
    return {row.model: row.as_price() for row in ModelPrice.objects.all()}


class UsageQuerySet(models.QuerySet["UsageRecord"]):
    def since(self, start: dt.datetime) -> UsageQuerySet:
        return self.filter(created_at__gte=start)

    def of_group(self, group_id: int) -> UsageQuerySet:
        return self.filter(user__groups=group_id)

    def sums(self) -> dict[str, Any]:
        return self.aggregate(**{name: Sum(name) for name in TOKEN_FIELDS})

    def spend(self, price_table: dict[str, Price] | None = None) -> Spend:
        """Totals, and the cost estimated per model from the price table."""
        table = prices() if price_table is None else price_table
        total, money, unpriced = TokenCounts(), Decimal(0), []
        rows = self.order_by().values("model").annotate(**{n: Sum(n) for n in TOKEN_FIELDS})
        for row in rows:
            counts = counts_of(row)
            total += counts
            if row["model"] in table:
                money += cost(counts, table[row["model"]])
            elif counts.total:
                unpriced.append(row["model"])
        return Spend(total, money, tuple(sorted(unpriced)))


class UsageRecord(models.Model):
    """What one model request consumed: a reply, or a keep-alive that is never in the thread.

    Kept when its conversation is deleted (the month's spending does not shrink)."""

    class Kind(models.TextChoices):
        REPLY = "reply"
        KEEPALIVE = "keepalive", "cache keep-alive"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="usage_records"
    )
    conversation = models.ForeignKey(
        "chat.Conversation", on_delete=models.SET_NULL, null=True, blank=True, related_name="usage"
    )
    message = models.OneToOneField(
        "chat.Message",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="usage_record",
    )
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.REPLY)
    model = models.CharField(max_length=100)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cache_read_tokens = models.PositiveIntegerField(default=0)
    cache_write_5m_tokens = models.PositiveIntegerField(default=0)
    cache_write_1h_tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = UsageQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["user", "created_at"])]
        verbose_name = "usage"
        verbose_name_plural = "usage report"

    def __str__(self) -> str:
        return f"{self.kind} {self.model} {self.created_at:%Y-%m-%d %H:%M}"

    @classmethod
    def fields_from_usage(cls, usage: dict[str, Any] | None) -> dict[str, int]:
        counts = counts_from_usage(usage)
        return {
            "input_tokens": counts.input,
            "output_tokens": counts.output,
            "cache_read_tokens": counts.cache_read,
            "cache_write_5m_tokens": counts.cache_write_5m,
            "cache_write_1h_tokens": counts.cache_write_1h,
        }

    @property
    def counts(self) -> TokenCounts:
        return TokenCounts(
            self.input_tokens,
            self.output_tokens,
            self.cache_read_tokens,
            self.cache_write_5m_tokens,
            self.cache_write_1h_tokens,
        )


def _price_field(help_text: str) -> models.DecimalField[Decimal, Decimal]:
    return models.DecimalField(max_digits=10, decimal_places=4, help_text=help_text)


class ModelPrice(models.Model):
    """The price table: US dollars per million tokens, per model id."""

    model = models.CharField(max_length=100, unique=True)
    input = _price_field("Input, per million tokens (USD).")
    output = _price_field("Output, per million tokens (USD).")
    cache_write_5m = _price_field("Cache write, 5-minute lifetime (usually 1.25 x input).")
    cache_write_1h = _price_field("Cache write, 1-hour lifetime (usually 2 x input).")
    cache_read = _price_field("Cache read (usually 0.1 x input).")

    class Meta:
        ordering = ["model"]

    def __str__(self) -> str:
        return self.model

    def as_price(self) -> Price:
        return Price(
            self.input, self.output, self.cache_write_5m, self.cache_write_1h, self.cache_read
        )


class GroupBudget(models.Model):
    """A group's monthly allowance (calendar month, UTC): tokens, cost, or both."""

    group = models.OneToOneField(Group, on_delete=models.CASCADE, related_name="budget")
    monthly_tokens = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="All tokens (input, cache, output); empty = no limit."
    )
    monthly_cost = models.DecimalField(
        max_digits=12,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="Estimated cost in USD; empty = no limit.",
    )
    warn_percent = models.PositiveSmallIntegerField(
        default=80, help_text="Staff see the group's members as near the limit from here."
    )

    objects = GenerationQuerySet.as_manager()

    def __str__(self) -> str:
        return f"Budget of {self.group}"

    def state(self, now: dt.datetime | None = None) -> BudgetState:
        """What the group's members have used this month against the limits."""
        spend = UsageRecord.objects.since(month_start(now)).of_group(self.group_id).spend()
        return BudgetState(self, spend)


@dataclass(frozen=True)
class BudgetState:
    budget: GroupBudget
    spend: Spend

    @property
    def percent(self) -> float:
        """The larger share of a limit used (0 with no limit)."""
        shares = [0.0]
        if self.budget.monthly_tokens:
            shares.append(100 * self.spend.counts.total / self.budget.monthly_tokens)
        if self.budget.monthly_cost:
            shares.append(float(100 * self.spend.cost / self.budget.monthly_cost))
        return max(shares)

    @property
    def over(self) -> bool:
        return self.percent >= 100

    @property
    def near(self) -> bool:
        return self.percent >= self.budget.warn_percent
