"""Deciding on a call held for staff needs ``chat.decide_toolpair``, on every path.

Being staff is not enough (issue 15, item 2): a staff account without the permission is
refused in the admin (its actions) and over its own chat socket, and the call stays held.
"""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from chat.models import Conversation, ToolPair
from chat.runtime import engine
from tests.chat.sockets.test_consumers_approvals import held_pair, require_approval
from tests.chat.test_admin import CHANGELIST, act, stored_call
from tests.conftest import frames_until

User = get_user_model()


def make_staff(name: str, *codenames: str) -> Any:
    user = User.objects.create_user(name, f"{name}@example.com", f"{name}-pass-123", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="chat", codename__in=codenames)
    )
    return User.objects.get(pk=user.pk)  # a fresh instance: no stale permission cache


def logged_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_admin_refuses_staff_without_permissions_and_the_call_stays_held(
    conversation: Conversation,
) -> None:
    pair = stored_call(conversation, approval="staff")
    client = logged_in(make_staff("plain"))
    assert client.get(reverse(CHANGELIST)).status_code == 403
    assert act(client, "approve_calls", pair).status_code == 403
    assert client.get(reverse("admin:chat_toolpair_change", args=[pair.pk])).status_code == 403
    pair.refresh_from_db()
    assert pair.status == ToolPair.Status.AWAITING_APPROVAL


@pytest.mark.django_db
def test_admin_hides_and_refuses_approve_and_deny_without_the_decide_permission(
    conversation: Conversation,
) -> None:
    pair = stored_call(conversation, approval="staff")
    client = logged_in(make_staff("support", "view_toolpair", "change_toolpair"))
    page = client.get(reverse(CHANGELIST)).content.decode()
    assert "cancel_calls" in page
    assert "approve_calls" not in page and "deny_calls" not in page
    act(client, "approve_calls", pair)
    act(client, "deny_calls", pair, confirm="yes", note="no")
    pair.refresh_from_db()
    assert pair.status == ToolPair.Status.AWAITING_APPROVAL and pair.decided_by is None


@pytest.mark.django_db
def test_admin_lets_staff_with_the_decide_permission_approve_and_deny(
    conversation: Conversation,
) -> None:
    reviewer = make_staff("reviewer", "view_toolpair", "decide_toolpair")
    client = logged_in(reviewer)
    first = stored_call(conversation, approval="staff")
    second = stored_call(conversation, approval="staff")
    assert "approve_calls" in client.get(reverse(CHANGELIST)).content.decode()
    act(client, "approve_calls", first)
    act(client, "deny_calls", second, confirm="yes", note="not now")
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == ToolPair.Status.QUEUED and first.decided_by == reviewer
    assert second.status == ToolPair.Status.DENIED and second.decided_by == reviewer


@pytest.mark.django_db
def test_admin_decide_permission_does_not_reach_owner_held_calls(
    conversation: Conversation,
) -> None:
    pair = stored_call(conversation, approval="owner")
    act(
        logged_in(make_staff("reviewer", "view_toolpair", "decide_toolpair")), "approve_calls", pair
    )
    pair.refresh_from_db()
    assert pair.status == ToolPair.Status.AWAITING_APPROVAL


async def socket_decision(connect: Any, user: Any, verb: str) -> tuple[ToolPair, list[str]]:
    """``user`` owns a conversation with a call held for staff and sends ``verb`` on its socket."""
    conversation = await Conversation.objects.acreate(owner=user, title="Staff's own")
    await require_approval("staff")
    socket = await connect(user, conversation.pk)
    pair, _ = await held_pair(socket, conversation)
    await socket.send_json_to({"type": verb, "pair": pair.pk})
    frames = await frames_until(
        socket, lambda f: "You may not" in f or "status-succeeded" in f or "status-denied" in f
    )
    await engine.idle()
    return await ToolPair.objects.select_related("decided_by").aget(pk=pair.pk), frames


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("verb", ["approve", "deny"])
async def test_socket_refuses_staff_without_the_permission_and_the_call_stays_held(
    connect: Any, verb: str
) -> None:
    user = await sync_to_async(make_staff)("plain", "view_toolpair", "change_toolpair")
    pair, frames = await socket_decision(connect, user, verb)
    assert f"You may not {verb} that tool call" in frames[-1]
    assert pair.status == ToolPair.Status.AWAITING_APPROVAL and pair.decided_by is None


@pytest.mark.django_db(transaction=True)
async def test_socket_lets_staff_with_the_permission_approve(connect: Any) -> None:
    user = await sync_to_async(make_staff)("reviewer", "decide_toolpair")
    pair, _ = await socket_decision(connect, user, "approve")
    assert pair.status == ToolPair.Status.SUCCEEDED and pair.decided_by == user


@pytest.mark.django_db(transaction=True)
async def test_socket_lets_a_superuser_approve(connect: Any, staff: Any) -> None:
    pair, _ = await socket_decision(connect, staff, "approve")
    assert pair.status == ToolPair.Status.SUCCEEDED and pair.decided_by == staff
