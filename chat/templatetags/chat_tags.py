from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe

from chat import rendering

register = template.Library()


@register.filter
def markdown(text: str) -> SafeString:
    """Markdown rendered and sanitized by nh3: safe to insert as HTML."""
    return mark_safe(rendering.markdown_to_html(text))  # noqa: S308 - sanitized by nh3


@register.filter
def pretty(value: Any) -> str:
    return rendering.pretty_json(value)


@register.filter
def result_text(value: Any) -> str:
    return rendering.result_text(value)


@register.filter
def percent(value: float | None) -> int:
    return round((value or 0) * 100)
