"""Staff approve a held tool call in admin; the owner's open chat follows live."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import send, start_conversation

pytestmark = pytest.mark.browser

NEEDS_STAFF = (
    "from tools.models import ToolPolicy, sync_policies; sync_policies(); "
    "ToolPolicy.objects.filter(tool_name='calculate').update(approval='staff')"
)


def test_it_shows_a_staff_approval_from_admin_in_the_owners_open_chat(
    new_page: Any, tandem_server: Any
) -> None:
    tandem_server.manage("shell", "-c", NEEDS_STAFF)
    chat = new_page("alice")
    start_conversation(chat)
    send(chat, "calculate 6*7")
    held = chat.locator(".tool-card.status-awaiting_approval", has_text="calculate")
    held.wait_for()
    assert "Waiting for staff approval" in held.inner_text()
    assert held.get_by_role("button", name="Approve").count() == 0
    chat.locator(".kind-reply.status-complete").wait_for()  # the conversation went on

    admin = new_page("staff")
    admin.goto("/admin/chat/toolpair/?status__exact=awaiting_approval")
    admin.locator("input[name='_selected_action']").first.check()
    admin.locator("select[name='action']").select_option("approve_calls")
    admin.locator("button[name='index']").click()
    admin.locator(".messagelist", has_text="Approved 1 tool call").wait_for()

    chat.locator(".tool-card.status-succeeded", has_text="calculate").wait_for()
    answer = chat.locator(".kind-reply.status-complete", has_text="call finished: 42")
    answer.wait_for()
    assert chat.locator(".tool-card.status-awaiting_approval").count() == 0
