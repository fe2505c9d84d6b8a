"""The live chat when things go wrong: the server dies under an open page, and the model
writes markup meant to run in the reader's browser."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.e2e.conftest import send, start_conversation
from tests.e2e.live_helpers import thread, wait_settled, wait_streaming_text
from tests.e2e.server import LiveServer

pytestmark = pytest.mark.browser

PAYLOAD = "\n\n".join(
    [
        "<script>window.__xss = 'script'</script>",
        "<img src=x onerror=\"window.__xss = 'img'\">",
        "[click me](javascript:window.__xss='markdown-link')",
        "<javascript:window.__xss='autolink'>",
        "<a href=\"javascript:window.__xss='a-tag'\">raw link</a>",
        "<svg onload=\"window.__xss='svg'\"></svg>",
        "[a safe link](https://example.com/)",
    ]
)

ACTIVE_JS = """() => ({
    inlineScripts: document.querySelectorAll('script:not([src])').length,
    threadScripts: document.querySelectorAll('#thread script').length,
    images: document.querySelectorAll('#thread img, #thread svg').length,
    handlers: Array.from(document.querySelectorAll('*')).filter(
        el => Array.from(el.attributes).some(a => a.name.toLowerCase().startsWith('on'))).length,
    scriptLinks: Array.from(document.querySelectorAll('[href], [src]')).filter(
        el => /^\\s*javascript:/i.test(el.getAttribute('href') || el.getAttribute('src'))).length,
    xss: typeof window.__xss,
})"""

INERT = {
    "inlineScripts": 0,
    "threadScripts": 0,
    "images": 0,
    "handlers": 0,
    "scriptLinks": 0,
    "xss": "undefined",
}


def test_it_reconnects_after_a_restart_and_catches_up_exactly(
    new_page: Any, tandem_server: LiveServer
) -> None:
    page = new_page("alice")
    url = start_conversation(page)
    send(page, "run the demo tool for 5 seconds")
    page.locator(".tool-card.status-running").wait_for()
    send(page, "Write a long answer about tandem bicycles")
    wait_streaming_text(page)

    tandem_server.kill()  # a tool running, a reply half written
    connection = page.locator("#connection")
    connection.and_(page.locator("[data-state='closed']")).wait_for()
    assert connection.inner_text() == "Reconnecting…"
    page.context.set_offline(True)  # this tab stays away while another one talks
    send(page, "Typed while away")  # not queued behind a dead socket: kept, and said so
    page.locator("#composer-error", has_text="Not connected").wait_for()
    assert page.get_by_role("textbox", name="Message").input_value() == "Typed while away"
    tandem_server.start()

    other = new_page("alice")
    other.goto(url)
    other.locator(".kind-reply.status-interrupted").wait_for(timeout=30_000)
    send(other, "Sent from the other tab while the first was away")
    other.locator(
        ".kind-reply.status-complete", has_text="call finished: tool_buffer_demo finished after 5 s"
    ).wait_for(timeout=30_000)
    other.locator(".kind-prompt:has-text('Sent from the other tab') ~ .kind-reply").last.wait_for()
    wait_settled(other)
    assert page.locator("#connection").get_attribute("data-state") == "closed"
    assert "Sent from the other tab" not in page.locator("#thread").inner_text()

    page.context.set_offline(False)
    page.locator("#connection[data-state='open']").wait_for(timeout=30_000)
    assert page.locator("#connection").inner_text() == "Connected"
    page.locator("#composer-error:empty").wait_for(state="attached")
    page.locator(".kind-prompt", has_text="Sent from the other tab").wait_for()
    page.locator(
        ".kind-reply", has_text="call finished: tool_buffer_demo finished after 5 s"
    ).wait_for()
    wait_settled(page)
    caught_up = thread(page)
    ids = [item[0] for item in caught_up]
    assert len(ids) == len(set(ids))  # no duplicate
    assert caught_up == thread(other)
    page.reload()
    page.locator("#connection[data-state='open']").wait_for()
    assert thread(page) == caught_up  # nothing missing, nothing extra, same states
    assert "Typed while away" not in page.locator("#thread").inner_text()


def test_it_renders_model_output_inert_under_a_strict_csp(new_page: Any) -> None:
    page = new_page("alice")
    url = start_conversation(page)
    response = page.goto(url)
    csp = response.headers["content-security-policy"]
    assert "script-src 'self' 'nonce-" in csp
    assert "style-src 'self'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    page.locator("#connection[data-state='open']").wait_for()

    send(page, "reply with exactly: " + PAYLOAD)
    while page.locator(".kind-reply.status-complete").count() == 0:
        assert page.evaluate(ACTIVE_JS) == INERT  # while it streams, too
        page.wait_for_timeout(50)
    reply = page.locator(".kind-reply.status-complete")
    for visible in ("<script>window.__xss", "<img src=x onerror=", "javascript:window"):
        assert visible in reply.inner_text()  # shown as text
    safe = reply.get_by_role("link", name="a safe link")
    assert safe.get_attribute("href") == "https://example.com/"
    assert safe.get_attribute("rel") == "noopener noreferrer nofollow"
    assert reply.get_by_role("link").count() == 1

    send(
        page,
        'call tool_buffer_demo with {"seconds": 0, '
        '"sample_data": "<img src=x onerror=window.__xss=1>"}',
    )
    page.locator(".tool-card.status-succeeded").wait_for()
    wait_settled(page)
    card = page.locator(".tool-card.status-succeeded")
    for part in (".tool-input pre", ".tool-result pre"):  # the input and the result, as text
        assert "<img src=x onerror=window.__xss=1>" in (card.locator(part).text_content() or "")
    assert page.evaluate(ACTIVE_JS) == INERT

    page.reload()  # the stored thread (and the title made from the payload) too
    page.locator("#connection[data-state='open']").wait_for()
    assert page.evaluate(ACTIVE_JS) == INERT


def test_it_says_what_happened_when_the_socket_closes(new_page: Any) -> None:
    page = new_page("alice")
    routes: list[Any] = []

    def through(ws: Any) -> None:  # a pass-through proxy the test can hang up
        ws.connect_to_server()
        routes.append(ws)

    page.route_web_socket(re.compile(r"/ws/conversations/\d+/$"), through)
    url = start_conversation(page)
    routes[-1].close(code=1001, reason="proxy restart")  # a clean close, not an error
    page.locator("#connection[data-state='closed']").wait_for()
    page.locator("#connection[data-state='open']").wait_for()  # and back, on its own
    assert len(routes) == 2
    send(page, "Still here after the proxy hung up?")
    page.locator(".kind-reply.status-complete").wait_for()

    other = page.context.new_page()
    other.goto(url)
    other.locator("summary", has_text="Conversation settings").click()
    other.get_by_role("button", name="Delete conversation").click()
    connection = page.locator("#connection[data-state='gone']")
    connection.wait_for()
    assert connection.inner_text() == "This conversation no longer exists"
