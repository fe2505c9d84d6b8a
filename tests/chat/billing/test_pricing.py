from __future__ import annotations

from decimal import Decimal

from chat.billing.pricing import DEFAULT_PRICES, Price, TokenCounts, cost, counts_from_usage


def test_it_reads_the_api_usage_with_the_lifetime_split() -> None:
    usage = {
        "input_tokens": 12,
        "output_tokens": 300,
        "cache_read_input_tokens": 4000,
        "cache_creation_input_tokens": 1500,
        "cache_creation": {"ephemeral_5m_input_tokens": 500, "ephemeral_1h_input_tokens": 1000},
        "service_tier": "standard",
    }
    assert counts_from_usage(usage) == TokenCounts(12, 300, 4000, 500, 1000)


def test_missing_or_odd_fields_count_as_zero() -> None:
    assert counts_from_usage(None) == TokenCounts()
    assert counts_from_usage({"input_tokens": "7", "output_tokens": -3, "x": 1}) == TokenCounts()
    assert counts_from_usage({"cache_creation_input_tokens": 9}).cache_write_5m == 9


def test_cache_rates_derive_from_the_input_price() -> None:
    price = Price.from_input_output("3", "15")
    assert (price.cache_write_5m, price.cache_write_1h, price.cache_read) == (
        Decimal("3.75"),
        Decimal("6"),
        Decimal("0.3"),
    )


def test_cost_sums_each_kind_at_its_rate() -> None:
    counts = TokenCounts(
        input=1_000_000, output=100_000, cache_read=2_000_000, cache_write_5m=0, cache_write_1h=10
    )
    expected = Decimal("3") + Decimal("1.5") + Decimal("0.6") + Decimal("0.00006")
    assert cost(counts, DEFAULT_PRICES["claude-sonnet-5-5"]) == expected


def test_counts_add_and_report_the_hit_ratio() -> None:
    total = TokenCounts(10, 5, 80, 10) + TokenCounts(0, 5, 0, 0, 0)
    assert total.total == 110 and total.cache_write == 10
    assert total.hit_ratio == 0.8
