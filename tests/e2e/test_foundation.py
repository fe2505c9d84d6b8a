"""A person logs in, sends a message, watches the reply stream in, reloads, sees the same."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import send, start_conversation

pytestmark = pytest.mark.browser


def test_it_streams_a_reply_in_pieces_and_keeps_it_after_reload(new_page: Any) -> None:
    page = new_page("alice")
    start_conversation(page)
    send(page, "Hello Claude, write a long answer about tandem bicycles")
    stream = page.locator(".status-streaming .stream")
    stream.wait_for()
    lengths = set()
    for _ in range(40):
        if page.locator(".kind-reply.status-complete").count():
            break
        lengths.add(len(stream.inner_text()) if stream.count() else -1)
        page.wait_for_timeout(50)
    assert len(lengths - {-1, 0}) >= 3  # the text grew in several steps
    reply = page.locator(".kind-reply.status-complete")
    reply.wait_for()
    final = reply.inner_text()
    assert "tandem bicycles" in page.locator(".kind-prompt").inner_text()
    page.reload()
    page.locator(".kind-reply.status-complete").wait_for()
    assert page.locator(".kind-reply.status-complete").inner_text() == final
    assert page.get_by_role("log").count() == 1


def test_it_requires_login_for_every_page(browser: Any, tandem_server: Any) -> None:
    context = browser.new_context(base_url=tandem_server.url)
    page = context.new_page()
    page.goto("/")
    assert "/login/" in page.url
    context.close()
