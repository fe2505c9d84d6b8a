"""The live chat in a real browser: users kept apart, tabs in step, tools working while the
user keeps talking, and Cancel and Stop, all from the keyboard too."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from tests.e2e.conftest import send, start_conversation
from tests.e2e.live_helpers import (
    focus_is_visible,
    press_until_focused,
    stream_text,
    thread,
    wait_settled,
    wait_streaming_text,
)

pytestmark = pytest.mark.browser

# Opens a socket to another conversation from the page and reports what came back.
PROBE_JS = """(path) => new Promise((resolve) => {
    const ws = new WebSocket(`ws://${location.host}${path}`);
    const got = [];
    let opened = false;
    ws.onopen = () => { opened = true; ws.send(JSON.stringify({type: 'sync', seq: 0, rev: 0})); };
    ws.onmessage = (e) => got.push(e.data);
    ws.onclose = (e) => resolve({opened, code: e.code, got});
    setTimeout(() => { ws.close(); resolve({opened, code: -1, got}); }, 5000);
})"""

CARD_JS = """() => {
    const card = document.querySelector('.tool-card[id^="pair-"]');
    const bar = card && card.querySelector('progress');
    const elapsed = card && card.querySelector('.elapsed');
    const replies = Array.from(document.querySelectorAll('#thread > article.kind-reply'));
    const second = replies[1];
    const stream = second && second.querySelector('.stream');
    return {
        status: card ? card.className.replace('tool-card status-', '') : null,
        badge: card ? card.querySelector('.badge').textContent : null,
        progress: bar ? Number(bar.value) : null,
        elapsed: elapsed ? elapsed.textContent : '',
        second: second ? (stream ? stream.textContent : second.innerText) : null,
    };
}"""


def test_it_keeps_two_users_apart_and_two_tabs_of_one_user_in_step(new_page: Any) -> None:
    alice = new_page("alice")
    url = start_conversation(alice)
    alice_again = alice.context.new_page()  # a second tab of the same session
    alice_again.goto(url)
    alice_again.locator("#connection[data-state='open']").wait_for()
    bob = new_page("bob")
    bob_url = start_conversation(bob)

    send(alice, "Write a long answer about tandems")
    send(bob, "Write a long answer about glaciers")
    samples: list[tuple[str, str]] = []
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        first, second = stream_text(alice), stream_text(alice_again)
        if first and second:
            samples.append((first, second))
        elif samples and first is None and second is None:
            break
        alice.wait_for_timeout(25)
    assert len({len(second) for _, second in samples}) >= 3  # the other tab saw it grow, live
    assert len({len(first) for first, _ in samples}) >= 3
    wait_settled(alice)
    wait_settled(alice_again)
    wait_settled(bob)
    assert thread(alice) == thread(alice_again)
    assert "about tandems" in alice.locator("#thread .kind-reply").inner_text()

    for page in (alice, alice_again):
        assert "glaciers" not in page.locator("body").inner_text()
    assert "tandems" not in bob.locator("body").inner_text()
    assert bob.locator("#conversation-list li").count() == 1
    assert bob.goto(url).status == 404  # alice's page, asked for by bob
    bob.goto(bob_url)
    probe = bob.evaluate(PROBE_JS, "/ws/conversations/" + url.rstrip("/").rsplit("/", 1)[1] + "/")
    assert probe["got"] == [] and probe["code"] != -1  # refused, nothing sent


def test_it_shows_a_tool_working_while_the_user_keeps_talking(new_page: Any) -> None:
    page = new_page("alice")
    start_conversation(page)
    send(page, "run the demo tool for 5 seconds")
    page.locator(".tool-card.status-running").wait_for()
    card = page.locator(".tool-card[id^='pair-']").first
    assert card.locator(".tool-name").inner_text() == "tool_buffer_demo"
    assert '"seconds": 5' in card.locator(".tool-input").inner_text()
    page.locator("#conversation-list").get_by_text("1 tool running").wait_for()
    send(page, "What is a tandem bicycle?")

    progress: list[float] = []
    answered_while_running = False
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        state = page.evaluate(CARD_JS)
        if state["status"] == "running":
            assert re.fullmatch(r"\d+ s", state["elapsed"]) or state["elapsed"] == ""
            if state["progress"] is not None:
                progress.append(state["progress"])
            if state["second"] and state["badge"] == "Running":
                answered_while_running = True
        elif state["status"] == "succeeded":
            break
        page.wait_for_timeout(100)
    assert answered_while_running  # the answer streamed in while the card said Running
    assert progress == sorted(progress) and len(set(progress)) >= 3  # the bar advanced
    assert card.locator(".badge").inner_text() == "Succeeded"

    page.locator(".kind-tool_calls .handoff", has_text="tool_buffer_demo").wait_for()
    continuation = page.locator(
        ".kind-reply.status-complete", has_text="call finished: tool_buffer_demo finished after 5 s"
    )
    continuation.wait_for()
    wait_settled(page)
    replies = page.locator("#thread > article.kind-reply.status-complete")
    assert replies.count() == 3  # preamble, the answer meanwhile, the continuation
    assert page.locator("#conversation-list").get_by_text("tool running").count() == 0

    before = thread(page)
    result = card.locator(".tool-result")  # collapsed, with a one-line preview
    assert not result.locator("pre").is_visible()
    assert "The test was successful" in result.locator("summary").inner_text()
    result.locator("summary").click()
    assert result.locator("pre").is_visible()

    page.reload()
    page.locator("#connection[data-state='open']").wait_for()
    assert thread(page) == before


def test_it_cancels_a_tool_and_stops_a_reply_from_the_keyboard(new_page: Any) -> None:
    page = new_page("alice")
    start_conversation(page)
    page.locator("#conv-title").click()  # focus leaves the composer
    press_until_focused(page, "#message-input")
    page.keyboard.type("run the demo tool for 60 seconds")
    page.keyboard.press("Enter")
    page.locator(".tool-card.status-running").wait_for()

    press_until_focused(page, ".tool-card button.cancel", key="Shift+Tab")
    assert focus_is_visible(page)
    page.keyboard.press("Enter")
    page.locator(".tool-card.status-cancelled").wait_for()
    page.locator(
        ".kind-reply.status-complete", has_text="The tool tool_buffer_demo failed"
    ).wait_for()
    wait_settled(page)
    page.wait_for_function("() => document.activeElement.id === 'message-input'")

    page.keyboard.type("Write a long answer about tandem bicycles")
    page.keyboard.press("Enter")
    wait_streaming_text(page, at_least=20)
    press_until_focused(page, ".status-streaming .actions button", key="Shift+Tab")
    assert page.evaluate("() => document.activeElement.textContent") == "Stop"
    assert focus_is_visible(page)
    page.keyboard.press("Space")
    stopped = page.locator(".kind-reply.status-interrupted")
    stopped.wait_for()
    assert "Stopped" in stopped.inner_text()
    assert stopped.locator(".markdown").first.inner_text().startswith("A long")  # text kept
    assert stopped.get_by_role("button", name="Retry").is_visible()
    page.wait_for_function("() => document.activeElement.id === 'message-input'")

    page.keyboard.type("Are you still there?")
    page.keyboard.press("Enter")
    answer = page.locator("#thread > article.kind-prompt:has-text('still there') + .kind-reply")
    answer.and_(page.locator(".status-complete")).wait_for()
    assert page.locator("#thread > article").last.get_attribute("id") == answer.get_attribute("id")
    assert len(answer.inner_text()) > 20
    assert page.locator(".kind-reply.status-error").count() == 0
