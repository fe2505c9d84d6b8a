"""Admin pages render, the tool pair actions work, and support pages are read-only."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from chat.models import Conversation, Message, ToolPair
from chat.services import messages, pairing
from tools.models import ToolPolicy

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:chat_toolpair_changelist"


@pytest.fixture
def staff_client(staff: Any) -> Client:
    client = Client()
    client.force_login(staff)
    return client


def stored_call(
    conversation: Conversation, *, approval: str = "auto", **tool_input: Any
) -> ToolPair:
    ToolPolicy.objects.filter(tool_name="calculate").update(approval=approval)
    messages.post_user_message(conversation.pk, "calculate <script>1+1</script>")
    reply = messages.start_reply(conversation.pk, conversation.messages.count())
    block = {
        "type": "tool_use",
        "id": f"toolu_admin_{ToolPair.objects.count()}",
        "name": "calculate",
        "input": tool_input or {"expression": "1+1"},
    }
    return pairing.store_tool_call(conversation.pk, reply.pk, block, 0)


def act(client: Client, action: str, pair: ToolPair, **extra: str) -> Any:
    data = {"action": action, "_selected_action": [str(pair.pk)], **extra}
    return client.post(reverse(CHANGELIST), data)


def test_it_lists_tool_pairs_with_their_columns(
    staff_client: Client, conversation: Conversation
) -> None:
    stored_call(conversation)
    page = staff_client.get(reverse(CHANGELIST))
    assert page.status_code == 200
    html = page.content.decode()
    for column in ("user", "conversation", "status", "duration", "created", "flushed at"):
        assert column in html.lower()
    assert "calculate" in html and "owner" in html


def test_it_searches_and_filters_tool_pairs(
    staff_client: Client, conversation: Conversation
) -> None:
    pair = stored_call(conversation)
    found = staff_client.get(reverse(CHANGELIST), {"q": pair.tool_use_id})
    assert found.context["cl"].result_count == 1
    by_user = staff_client.get(reverse(CHANGELIST), {"q": "owner"})
    assert by_user.context["cl"].result_count == 1
    by_title = staff_client.get(reverse(CHANGELIST), {"q": "Test"})
    assert by_title.context["cl"].result_count == 1
    none = staff_client.get(reverse(CHANGELIST), {"status__exact": "denied"})
    assert none.context["cl"].result_count == 0
    by_tool = staff_client.get(reverse(CHANGELIST), {"tool_name": "calculate"})
    assert by_tool.context["cl"].result_count == 1


def test_it_shows_a_pair_pretty_printed_escaped_with_timeline_and_links(
    staff_client: Client, conversation: Conversation
) -> None:
    pair = stored_call(conversation, expression="<b>1</b>+1")
    pairing.record_result(pair.pk, status="succeeded", content='{"answer": 2}', is_error=False)
    page = staff_client.get(reverse("admin:chat_toolpair_change", args=[pair.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "&quot;expression&quot;: &quot;&lt;b&gt;1&lt;/b&gt;+1&quot;" in html
    assert "<b>1</b>" not in html
    assert "{\n  &quot;answer&quot;: 2\n}" in html
    assert "<td>requested</td>" in html and "<td>succeeded</td>" in html
    assert reverse("admin:chat_conversation_change", args=[conversation.pk]) in html
    assert conversation.get_absolute_url() in html
    assert 'name="_save"' not in html


def test_it_approves_a_staff_approval_call_from_the_list(
    staff_client: Client, conversation: Conversation, staff: Any
) -> None:
    pair = stored_call(conversation, approval="staff")
    response = act(staff_client, "approve_calls", pair)
    assert response.status_code == 302
    pair.refresh_from_db()
    assert pair.status == ToolPair.Status.QUEUED and pair.decided_by == staff


def test_it_warns_when_staff_try_to_approve_an_owner_approval_call(
    staff_client: Client, conversation: Conversation
) -> None:
    pair = stored_call(conversation, approval="owner")
    response = act(staff_client, "approve_calls", pair)
    followed = staff_client.get(response["Location"])
    assert "You may not approve that tool call" in followed.content.decode()
    pair.refresh_from_db()
    assert pair.status == ToolPair.Status.AWAITING_APPROVAL


def test_it_asks_for_a_note_then_denies(
    staff_client: Client, conversation: Conversation, staff: Any
) -> None:
    pair = stored_call(conversation, approval="staff")
    form = act(staff_client, "deny_calls", pair)
    assert form.status_code == 200
    assert "Deny tool calls" in form.content.decode()
    pair.refresh_from_db()
    assert pair.status == ToolPair.Status.AWAITING_APPROVAL
    done = act(staff_client, "deny_calls", pair, confirm="yes", note="Not on a Friday")
    assert done.status_code == 302
    pair.refresh_from_db()
    assert pair.status == ToolPair.Status.DENIED
    assert pair.result_content == "Denied by staff: Not on a Friday"
    assert (pair.decided_by, pair.decision_note) == (staff, "Not on a Friday")


def test_it_cancels_an_open_call(staff_client: Client, conversation: Conversation) -> None:
    pair = stored_call(conversation)
    pairing.mark_running(pair.pk, "test-runner")
    act(staff_client, "cancel_calls", pair)
    pair.refresh_from_db()
    assert pair.status == ToolPair.Status.CANCELLED
    assert "cancelled by staff" in str(pair.result_content)


def test_it_retries_a_failed_unflushed_call(
    staff_client: Client, conversation: Conversation
) -> None:
    pair = stored_call(conversation)
    pairing.mark_running(pair.pk, "test-runner")
    pairing.record_result(pair.pk, status="failed", content="boom", is_error=True)
    act(staff_client, "retry_calls", pair)
    pair.refresh_from_db()
    assert pair.status == ToolPair.Status.QUEUED and pair.attempts == 1


def test_it_keeps_tool_pairs_from_being_added_edited_or_deleted(
    staff_client: Client, conversation: Conversation
) -> None:
    pair = stored_call(conversation)
    assert staff_client.get(reverse("admin:chat_toolpair_add")).status_code == 403
    change = reverse("admin:chat_toolpair_change", args=[pair.pk])
    assert staff_client.post(change, {"status": "succeeded"}).status_code == 403
    delete = reverse("admin:chat_toolpair_delete", args=[pair.pk])
    assert staff_client.post(delete, {"post": "yes"}).status_code == 403
    assert ToolPair.objects.get(pk=pair.pk).status == ToolPair.Status.QUEUED


def test_it_shows_a_conversation_read_only_with_its_messages(
    staff_client: Client, conversation: Conversation
) -> None:
    stored_call(conversation)
    url = reverse("admin:chat_conversation_change", args=[conversation.pk])
    page = staff_client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert "calculate &lt;script&gt;1+1&lt;/script&gt;" in html and "<script>1+1" not in html
    assert '<pre class="tandem-json">' in html
    assert 'name="_save"' not in html
    assert staff_client.post(url, {"title": "Changed"}).status_code == 403
    conversation.refresh_from_db()
    assert conversation.title == "Test"


def test_it_refuses_adding_or_deleting_conversations_and_messages(
    staff_client: Client, conversation: Conversation
) -> None:
    stored_call(conversation)
    message = Message.objects.filter(conversation=conversation).first()
    assert message is not None
    assert staff_client.get(reverse("admin:chat_conversation_add")).status_code == 403
    assert staff_client.get(reverse("admin:chat_message_add")).status_code == 403
    delete = reverse("admin:chat_conversation_delete", args=[conversation.pk])
    assert staff_client.post(delete, {"post": "yes"}).status_code == 403
    page = staff_client.get(reverse("admin:chat_message_change", args=[message.pk]))
    assert page.status_code == 200 and '<pre class="tandem-json">' in page.content.decode()


def test_it_keeps_admin_from_a_non_staff_user(owner: Any) -> None:
    client = Client()
    client.force_login(owner)
    response = client.get(reverse(CHANGELIST))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
