"""In a browser: a reply's usage opens on demand with grouped numbers; the page's totals too."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.e2e.conftest import send, start_conversation

pytestmark = pytest.mark.browser

GROUPED = re.compile(r"\d{1,3}(,\d{3})+")


def test_a_replys_usage_opens_with_grouped_numbers(new_page: Any) -> None:
    page = new_page("alice")
    start_conversation(page)
    send(page, "Tell me about tandem bicycles. " + "Some context to weigh. " * 300)
    reply = page.locator(".kind-reply.status-complete")
    reply.wait_for()
    usage = reply.locator("details.usage")
    assert not usage.locator("p").is_visible()  # on demand only
    usage.locator("summary").click()
    text = usage.locator("p").inner_text()
    assert re.search(r"^Input \S+ · output \d+ · cache read \S+ · cache write \S+ tokens$", text)
    assert GROUPED.search(text)  # about 1,700 input tokens, grouped by thousands
    page.reload()
    totals = page.locator("#conv-usage").inner_text()
    assert totals.startswith("This conversation: ") and "estimated cost $" in totals
    assert GROUPED.search(totals)
