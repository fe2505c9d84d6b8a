"""What an open page says when its socket ends for good, and a refused message kept in the box."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import send, start_conversation
from tests.e2e.server import LiveServer

pytestmark = pytest.mark.browser

RAW_SEND_JS = """([url, size]) => new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.onopen = () => ws.send(JSON.stringify({type: "send", text: "x".repeat(size)}));
    ws.onmessage = (e) => {
        if (e.data.includes("composer-error")) { ws.close(); resolve(e.data); }
    };
    ws.onclose = (e) => resolve("closed " + e.code);
})"""


@pytest.fixture
def tandem_server(tmp_path: Path, seeded_database: Path) -> Iterator[LiveServer]:
    """The usual live server, with one message a minute so a refusal is easy to provoke, and
    four sockets per user (two pages)."""
    limits = {"TANDEM_RATE_LIMIT_PER_MINUTE": "1", "TANDEM_MAX_SOCKETS_PER_USER": "4"}
    server = LiveServer(tmp_path, extra_env=limits)
    shutil.copyfile(seeded_database, server.database)
    server.start()
    yield server
    server.stop()


def stays_gone(page: Any, text: str) -> None:
    status = page.locator("#connection[data-state='gone']", has_text=text)
    status.wait_for()
    page.wait_for_timeout(1500)  # no reconnect loop: still the same words a while later
    assert status.is_visible()


def test_it_says_signed_out_when_another_tab_logs_out(new_page: Any) -> None:
    page = new_page("alice")
    start_conversation(page)
    other = page.context.new_page()
    other.goto("/")
    other.get_by_role("button", name="Log out").click()
    stays_gone(page, "Signed out")
    link = page.locator("#connection").get_by_role("link", name="Log in again")
    assert link.get_attribute("href", timeout=1000).startswith("/login/?next=%2Fconversations%2F")


def test_it_says_the_conversation_no_longer_exists_when_deleted_elsewhere(new_page: Any) -> None:
    page = new_page("alice")
    url = start_conversation(page)
    other = page.context.new_page()
    other.goto(url)
    other.locator(".conv-menu summary").click()
    other.get_by_role("button", name="Delete conversation").click()
    other.wait_for_url("**/")
    stays_gone(page, "This conversation no longer exists")


def test_it_says_the_conversation_no_longer_exists_after_reconnecting_to_it(
    new_page: Any, tandem_server: LiveServer
) -> None:
    page = new_page("alice")
    url = start_conversation(page)
    conversation_id = int(url.rstrip("/").rsplit("/", 1)[1])
    tandem_server.kill()
    tandem_server.manage(
        "shell",
        "-c",
        "from chat.models import Conversation; "
        f"Conversation.objects.filter(pk={conversation_id}).delete()",
    )
    tandem_server.start()  # the page reconnects to a conversation that is gone
    stays_gone(page, "This conversation no longer exists")


def test_it_keeps_a_refused_message_in_the_box_beside_the_reason(new_page: Any) -> None:
    page = new_page("alice")
    start_conversation(page)
    box = page.get_by_role("textbox", name="Message")
    assert box.get_attribute("maxlength") == "20000"
    assert page.locator("#message-limit").inner_text() == "Up to 20,000 characters per message."
    send(page, "the first message")
    page.locator("#thread .kind-prompt", has_text="the first message").wait_for()
    page.wait_for_function("document.getElementById('message-input').value === ''")
    send(page, "the second message, one too many")
    page.locator("#composer-error", has_text="too fast").wait_for()
    assert box.input_value() == "the second message, one too many"


def test_it_answers_a_frame_past_the_servers_default_limit_with_the_message_limit(
    new_page: Any, tandem_server: LiveServer
) -> None:
    page = new_page("alice")
    url = start_conversation(page)
    ws_url = url.replace("http://", "ws://").replace("/conversations/", "/ws/conversations/")
    answer = page.evaluate(RAW_SEND_JS, [ws_url, 3 * 1024 * 1024])
    assert "That message is too long (limit 20,000 characters)." in answer


def test_it_says_too_many_tabs_when_a_user_opens_past_the_cap(new_page: Any) -> None:
    page = new_page("alice")
    url = start_conversation(page)
    second = page.context.new_page()
    second.goto(url)
    second.locator("#connection[data-state='open']").wait_for()
    third = page.context.new_page()
    third.goto(url)
    stays_gone(third, "Too many open Tandem tabs")
    second.close()
    third.wait_for_timeout(1000)  # the server hears of the closed tab
    third.reload()
    third.locator("#connection[data-state='open']").wait_for()
