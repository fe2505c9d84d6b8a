"""Token counts from the API's ``usage`` object, and what they cost at a model's prices.

The API reports, per reply: ``input_tokens`` (only the tokens after the last cache breakpoint),
``cache_creation_input_tokens`` (written to the cache, split by lifetime in ``cache_creation``:
``ephemeral_5m_input_tokens`` and ``ephemeral_1h_input_tokens``), ``cache_read_input_tokens``
and ``output_tokens``. Prices are US dollars per million tokens. Pure: no database.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

MILLION = Decimal(1_000_000)
# Multipliers of the input price (public price list): a 5-minute write, a 1-hour write, a read.
WRITE_5M = Decimal("1.25")
WRITE_1H = Decimal("2")
READ = Decimal("0.1")


@dataclass(frozen=True)
class TokenCounts:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0

    @property
    def cache_write(self) -> int:
        return self.cache_write_5m + self.cache_write_1h

    @property
    def total(self) -> int:
        """Every token billed: all input (uncached, written, read) and output."""
        return self.input + self.output + self.cache_read + self.cache_write

    @property
    def hit_ratio(self) -> float:
        """Share of the prompt read from the cache."""
        prompt = self.input + self.cache_read + self.cache_write
        return self.cache_read / prompt if prompt else 0.0

    def __add__(self, other: TokenCounts) -> TokenCounts:
        return TokenCounts(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write_5m + other.cache_write_5m,
            self.cache_write_1h + other.cache_write_1h,
        )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def counts_from_usage(usage: Mapping[str, Any] | None) -> TokenCounts:
    """The counts of one reply's ``usage`` (missing or malformed fields count as 0)."""
    usage = usage or {}
    written = _int(usage.get("cache_creation_input_tokens"))
    split = usage.get("cache_creation")
    one_hour = _int(split.get("ephemeral_1h_input_tokens")) if isinstance(split, dict) else 0
    one_hour = min(one_hour, written)
    return TokenCounts(
        input=_int(usage.get("input_tokens")),
        output=_int(usage.get("output_tokens")),
        cache_read=_int(usage.get("cache_read_input_tokens")),
        cache_write_5m=written - one_hour,
        cache_write_1h=one_hour,
    )


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input: Decimal
    output: Decimal
    cache_write_5m: Decimal
    cache_write_1h: Decimal
    cache_read: Decimal

    @classmethod
    def from_input_output(cls, input_price: str, output_price: str) -> Price:
        """A price with the cache rates derived from the input price, as the price list does."""
        base = Decimal(input_price)
        return cls(base, Decimal(output_price), base * WRITE_5M, base * WRITE_1H, base * READ)

    def fields(self) -> dict[str, Decimal]:
        """The price as the ModelPrice row's fields (the same names)."""
        return dataclasses.asdict(self)


def cost(counts: TokenCounts, price: Price) -> Decimal:
    """What the counts cost in US dollars (unrounded)."""
    return (
        counts.input * price.input
        + counts.output * price.output
        + counts.cache_write_5m * price.cache_write_5m
        + counts.cache_write_1h * price.cache_write_1h
        + counts.cache_read * price.cache_read
    ) / MILLION


# The defaults seeded into the price table (admin: "Model prices"); staff keep them current.
DEFAULT_PRICES: dict[str, Price] = {
    "claude-opus-5-5": Price.from_input_output("5", "25"),
    "claude-sonnet-5-5": Price.from_input_output("3", "15"),
    "claude-haiku-5-5": Price.from_input_output("1", "5"),
    "claude-sonnet-4-5": Price.from_input_output("3", "15"),
    "claude-haiku-4-5": Price.from_input_output("1", "5"),
}
