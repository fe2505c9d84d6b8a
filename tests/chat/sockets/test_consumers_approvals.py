"""Approvals from the chat: the tool card's buttons, over the real socket stack."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from chat.models import Conversation, Message, ToolPair
from chat.runtime import engine
from chat.services import approvals
from tests.conftest import frames_until
from tools.models import ToolPolicy

pytestmark = pytest.mark.django_db(transaction=True)


async def require_approval(mode: str) -> None:
    await ToolPolicy.objects.filter(tool_name="calculate").aupdate(approval=mode)


async def held_pair(socket: Any, conversation: Conversation) -> tuple[ToolPair, str]:
    """Ask for a call that needs approval; the pair and the finished reply's frame (card)."""
    await socket.send_json_to({"type": "send", "text": "calculate 6*7"})
    frames = await frames_until(socket, lambda f: "kind-reply status-complete" in f)
    pair = await ToolPair.objects.aget(conversation=conversation)
    assert pair.status == ToolPair.Status.AWAITING_APPROVAL
    return pair, frames[-1]


async def test_it_shows_approve_and_deny_buttons_and_runs_the_call_once_approved(
    connect: Any, owner: Any, conversation: Conversation
) -> None:
    await require_approval("owner")
    socket = await connect(owner, conversation.pk)
    pair, card = await held_pair(socket, conversation)
    assert "Waiting for your approval" in card
    assert '"type": "approve"' in card and '"type": "deny"' in card
    await socket.send_json_to({"type": "approve", "pair": pair.pk})
    await frames_until(socket, lambda f: "status-succeeded" in f)
    await frames_until(
        socket, lambda f: "kind-reply status-complete" in f and "call finished: 42" in f
    )
    await engine.idle()
    pair = await ToolPair.objects.select_related("decided_by").aget(pk=pair.pk)
    assert pair.decided_by == owner and pair.flushed_at is not None


async def test_it_tells_the_model_who_denied_a_call(
    connect: Any, owner: Any, conversation: Conversation
) -> None:
    await require_approval("owner")
    socket = await connect(owner, conversation.pk)
    pair, _ = await held_pair(socket, conversation)
    await socket.send_json_to({"type": "deny", "pair": pair.pk, "note": "not today"})
    await frames_until(
        socket, lambda f: "kind-reply status-complete" in f and "Denied by owner" in f
    )
    await engine.idle()
    pair = await ToolPair.objects.aget(pk=pair.pk)
    assert pair.status == ToolPair.Status.DENIED
    assert pair.result_content == "Denied by owner: not today"


async def test_it_says_a_staff_approval_call_waits_for_staff_and_refuses_the_owner(
    connect: Any, owner: Any, conversation: Conversation, staff: Any
) -> None:
    await require_approval("staff")
    socket = await connect(owner, conversation.pk)
    pair, card = await held_pair(socket, conversation)
    await socket.send_json_to({"type": "approve", "pair": pair.pk})
    assert "Waiting for staff approval" in card
    assert '"type": "approve"' not in card
    await frames_until(socket, lambda f: "You may not approve that tool call" in f)
    await sync_to_async(approvals.approve)(pair.pk, staff)
    await frames_until(
        socket, lambda f: "kind-reply status-complete" in f and "call finished: 42" in f
    )
    await engine.idle()


async def test_it_refuses_and_logs_an_outsider_approving_over_their_own_socket(
    connect: Any,
    owner: Any,
    outsider: Any,
    conversation: Conversation,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await require_approval("owner")
    socket = await connect(owner, conversation.pk)
    pair, _ = await held_pair(socket, conversation)
    theirs = await Conversation.objects.acreate(owner=outsider, title="Mine")
    intruder = await connect(outsider, theirs.pk)
    with caplog.at_level(logging.WARNING, logger="chat.services.approvals"):
        await intruder.send_json_to({"type": "approve", "pair": pair.pk})
        await frames_until(intruder, lambda f: "You may not approve that tool call" in f)
        await intruder.send_json_to({"type": "deny", "pair": pair.pk})
        await frames_until(intruder, lambda f: "You may not deny that tool call" in f)
    assert "'outsider' may not approve tool call" in caplog.text
    pair = await ToolPair.objects.aget(pk=pair.pk)
    assert pair.status == ToolPair.Status.AWAITING_APPROVAL
    assert await Message.objects.filter(conversation=theirs).acount() == 0
    await engine.idle()
