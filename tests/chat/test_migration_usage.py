"""Migration 0003 seeds the price table and gives replies stored before it a usage record."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from chat.models import Conversation, Message, ModelPrice, UsageRecord

pytestmark = pytest.mark.django_db

migration = importlib.import_module("chat.migrations.0003_usage_prices_budgets")


def test_it_seeds_prices_and_backfills_usage(conversation: Conversation) -> None:
    ModelPrice.objects.all().delete()
    Message.objects.create(
        conversation=conversation,
        seq=1,
        role="assistant",
        kind="reply",
        usage={"input_tokens": 3, "output_tokens": 4, "cache_read_input_tokens": 5},
    )
    Message.objects.create(conversation=conversation, seq=2, role="user", kind="prompt")
    migration.seed_prices_and_backfill(apps, None)
    assert ModelPrice.objects.get(model="claude-sonnet-5-5").as_price().input == 3
    record = UsageRecord.objects.get()
    assert (record.user_id, record.input_tokens, record.output_tokens) == (
        conversation.owner_id,
        3,
        4,
    )
    assert record.cache_read_tokens == 5 and record.model == conversation.model
