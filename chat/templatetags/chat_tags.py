from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe

from chat import markdown_stream, rendering
from chat.billing.pricing import TokenCounts, counts_from_usage

register = template.Library()


@register.filter
def markdown(text: str) -> SafeString:
    """Markdown rendered and sanitized by nh3: safe to insert as HTML."""
    return mark_safe(rendering.markdown_to_html(text))  # noqa: S308 - sanitized by nh3


@dataclass(frozen=True)
class _SafeStream:
    finished_html: SafeString
    open_html: SafeString


@register.filter
def stream_markdown(text: str | None) -> _SafeStream:
    """A streaming reply's text as its tabs show it: finished blocks, then the open block."""
    render = markdown_stream.render(text or "")
    return _SafeStream(
        mark_safe(render.finished_html),  # noqa: S308 - sanitized by nh3
        mark_safe(render.open_html),  # noqa: S308 - sanitized by nh3
    )


@register.filter
def pretty(value: Any) -> str:
    return rendering.pretty_json(value)


@register.filter
def result_text(value: Any) -> str:
    return rendering.result_text(value)


@register.filter
def percent(value: float | None) -> int:
    return round((value or 0) * 100)


@register.filter
def thousands(value: Any) -> str:
    """An integer with its thousands grouped: 12345 -> "12,345"."""
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return "0"


@register.filter
def usd(value: Any) -> str:
    """An estimated cost in US dollars: four decimals below a cent, two above."""
    try:
        amount = Decimal(value)
    except (TypeError, ValueError, ArithmeticError):
        return "$0.00"
    return f"${amount:,.4f}" if amount < Decimal("0.01") else f"${amount:,.2f}"


@register.filter
def usage_counts(usage: Any) -> TokenCounts:
    """A reply's stored ``usage`` as counts (input, output, cache read and write)."""
    return counts_from_usage(usage if isinstance(usage, dict) else None)
