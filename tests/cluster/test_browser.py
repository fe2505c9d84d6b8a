"""A real browser through nginx: two tabs, a tool on a worker, Cancel, a web process killed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster.harness import PASSWORDS, Cluster
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, send, start_conversation
from tests.e2e.live_helpers import wait_settled

pytestmark = [pytest.mark.cluster, pytest.mark.browser, pytest.mark.postgres, pytest.mark.redis]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def signed_in_page(browser: Any, cluster: Cluster) -> Any:
    context = browser.new_context(base_url=cluster.url)
    context.set_default_timeout(20_000)
    page = context.new_page()
    page.goto("/login/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORDS["alice"])
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")
    return page


def _explain(cluster: Cluster, url: str, *pages: Any) -> None:
    """What the database and the tabs held when a wait ran out (a rare failure under load)."""
    conversation_id = int(url.rstrip("/").rsplit("/", 1)[-1])
    for row in cluster.sql(
        "SELECT id, seq, role, status FROM chat_message WHERE conversation_id = %s ORDER BY seq",
        conversation_id,
    ):
        print("message", row)
    for row in cluster.sql(
        "SELECT id, status, runner FROM chat_toolpair WHERE conversation_id = %s ORDER BY id",
        conversation_id,
    ):
        print("pair", row)
    for tab in pages:
        state = tab.locator("#connection").get_attribute("data-state")
        box = tab.get_by_role("textbox", name="Message").input_value()
        cards = tab.locator(".tool-card").evaluate_all("els => els.map(e => e.className)")
        print("tab", state, repr(box), cards)


def test_two_tabs_through_the_proxy_follow_a_tool_on_a_worker(
    browser: Any, cluster: Cluster
) -> None:
    page = signed_in_page(browser, cluster)
    url = start_conversation(page)
    other = signed_in_page(browser, cluster)
    other.goto(url)
    other.locator("#connection[data-state='open']").wait_for()
    try:
        send(page, "run the demo tool for 2 seconds")
        for tab in (page, other):
            tab.locator(".tool-card", has_text="tool_buffer_demo").wait_for()
            tab.locator(".progress-text", has_text="of 2 s").first.wait_for()
        for tab in (page, other):
            wait_settled(tab)
            tab.locator("article", has_text="The test was successful").last.wait_for()
        send(other, "run the demo tool for 30 seconds")
        card = page.locator(".tool-card.status-running", has_text="tool_buffer_demo")
        try:
            card.wait_for(timeout=40_000)
        except Exception:
            _explain(cluster, url, page, other)
            raise
        card.get_by_role("button", name="Cancel").click()
        for tab in (page, other):
            tab.locator(".tool-card.status-cancelled").first.wait_for()
            wait_settled(tab)
        # Kill the process that ran the last turn; the tabs reconnect through nginx.
        conversation_id = int(url.rstrip("/").rsplit("/", 1)[-1])
        runner = cluster.sql(
            "SELECT runner FROM chat_toolpair WHERE conversation_id = %s ORDER BY id",
            conversation_id,
        )
        assert all(cluster.child_of(r).startswith("worker") for (r,) in runner)
        old = cluster.kill("web 1")
        for tab in (page, other):  # a tab whose socket was there notices, then reconnects
            tab.wait_for_timeout(1000)
            tab.locator("#connection[data-state='open']").wait_for()
        send(page, "what is 6*7")
        for tab in (page, other):
            tab.locator("article", has_text="42").last.wait_for()
            wait_settled(tab)
        cluster.wait_restarted("web 1", old)
    finally:
        page.context.close()
        other.context.close()
