"""Approving, denying and retrying tool calls through the service layer."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

import pytest
from django.utils import timezone

from chat.models import Conversation, ToolPair
from chat.services import approvals, messages, pairing
from chat.services.errors import NotAllowed, UserInputError
from tools.models import ToolPolicy

pytestmark = pytest.mark.django_db


def stored_call(conversation: Conversation, mode: str, **policy: Any) -> ToolPair:
    ToolPolicy.objects.filter(tool_name="calculate").update(approval=mode, **policy)
    messages.post_user_message(conversation.pk, "calculate 1+1")
    reply = messages.start_reply(conversation.pk, conversation.messages.count())
    block = {
        "type": "tool_use",
        "id": f"toolu_{mode}_{ToolPair.objects.count()}",
        "name": "calculate",
        "input": {"expression": "1+1"},
    }
    return pairing.store_tool_call(conversation.pk, reply.pk, block, 0)


def held_call(conversation: Conversation, mode: str, **policy: Any) -> ToolPair:
    pair = stored_call(conversation, mode, **policy)
    assert pair.status == ToolPair.Status.AWAITING_APPROVAL
    return pair


def failed_call(conversation: Conversation) -> ToolPair:
    """A call that ran and failed, its result not handed to the model yet."""
    pair = stored_call(conversation, "auto")
    assert pairing.mark_running(pair.pk, "test-runner") is not None
    pairing.record_result(pair.pk, status="failed", content="boom", is_error=True)
    return pair


def refused_call(conversation: Conversation) -> ToolPair:
    ToolPolicy.objects.filter(tool_name="calculate").update(enabled=False)
    pair = stored_call(conversation, "auto")
    assert pair.status == ToolPair.Status.DENIED
    return pair


def test_it_lets_the_owner_approve_an_owner_approval_call(
    conversation: Conversation, owner: Any, django_capture_on_commit_callbacks: Any
) -> None:
    pair = held_call(conversation, "owner")
    with django_capture_on_commit_callbacks() as callbacks:
        approved = approvals.approve(pair.pk, owner)
    assert approved.status == ToolPair.Status.QUEUED
    assert (approved.decision, approved.decided_by, approved.decided_at is not None) == (
        "approved",
        owner,
        True,
    )
    assert approved.timeline[-1]["event"] == "approved by owner"
    assert len(callbacks) >= 2  # the doorbell and the run


def test_it_starts_the_run_timeout_when_the_call_is_approved(
    conversation: Conversation, owner: Any
) -> None:
    pair = held_call(conversation, "owner", timeout_s=60)
    approved = approvals.approve(pair.pk, owner)
    assert approved.deadline_at is not None
    left = (approved.deadline_at - timezone.now()).total_seconds()
    assert 55 < left <= 60


def test_it_keeps_the_deadline_when_the_wait_counts_toward_the_timeout(
    conversation: Conversation, owner: Any
) -> None:
    pair = held_call(conversation, "owner", timeout_s=60, approval_counts_toward_timeout=True)
    assert approvals.approve(pair.pk, owner).deadline_at == pair.deadline_at


def test_it_lets_staff_approve_a_staff_approval_call(
    conversation: Conversation, staff: Any
) -> None:
    pair = held_call(conversation, "staff")
    approved = approvals.approve(pair.pk, staff)
    assert approved.status == ToolPair.Status.QUEUED and approved.decided_by == staff


def test_it_refuses_and_logs_an_outsider_approving(
    conversation: Conversation, outsider: Any, caplog: pytest.LogCaptureFixture
) -> None:
    pair = held_call(conversation, "owner")
    with caplog.at_level(logging.WARNING, logger="chat.services.approvals"):
        with pytest.raises(NotAllowed):
            approvals.approve(pair.pk, outsider)
        with pytest.raises(NotAllowed):
            approvals.deny(pair.pk, outsider, "no")
    assert "'outsider' may not approve tool call" in caplog.text
    assert "'outsider' may not deny tool call" in caplog.text
    pair.refresh_from_db()
    assert pair.status == ToolPair.Status.AWAITING_APPROVAL and pair.decided_by is None


def test_it_refuses_the_owner_approving_a_staff_approval_call(
    conversation: Conversation, owner: Any
) -> None:
    pair = held_call(conversation, "staff")
    with pytest.raises(NotAllowed):
        approvals.approve(pair.pk, owner)


def test_it_refuses_staff_approving_an_owner_approval_call(
    conversation: Conversation, staff: Any
) -> None:
    pair = held_call(conversation, "owner")
    with pytest.raises(NotAllowed):
        approvals.approve(pair.pk, staff)


def test_it_refuses_a_pair_of_another_conversation(conversation: Conversation, owner: Any) -> None:
    pair = held_call(conversation, "owner")
    other = Conversation.objects.create(owner=owner, title="Other")
    with pytest.raises(NotAllowed):
        approvals.approve(pair.pk, owner, conversation_id=other.pk)


def test_it_tells_the_owner_when_a_call_no_longer_waits(
    conversation: Conversation, owner: Any, outsider: Any
) -> None:
    pair = held_call(conversation, "owner")
    approvals.approve(pair.pk, owner)
    with pytest.raises(UserInputError):
        approvals.approve(pair.pk, owner)
    with pytest.raises(NotAllowed):
        approvals.deny(pair.pk, outsider)


def test_it_answers_a_denied_call_with_an_error_naming_who_and_why(
    conversation: Conversation, owner: Any
) -> None:
    pair = held_call(conversation, "owner")
    denied = approvals.deny(pair.pk, owner, "  not\nnow ")
    assert denied.status == ToolPair.Status.DENIED and denied.is_error
    assert denied.result_content == "Denied by owner: not now"
    assert (denied.decided_by, denied.decision_note) == (owner, "not now")
    assert denied.attempts == 0
    flushed = pairing.flush_ready(conversation.pk)
    assert [p.pk for p in flushed] == [pair.pk]
    results = conversation.messages.order_by("-seq").first()
    assert results is not None and results.content == [
        {
            "type": "tool_result",
            "tool_use_id": pair.tool_use_id,
            "content": "Denied by owner: not now",
            "is_error": True,
        }
    ]


def test_it_retries_a_failed_call_that_was_not_flushed(
    conversation: Conversation, staff: Any, django_capture_on_commit_callbacks: Any
) -> None:
    pair = failed_call(conversation)
    with django_capture_on_commit_callbacks() as callbacks:
        retried = approvals.retry(pair.pk, staff)
    assert retried.status == ToolPair.Status.QUEUED and retried.attempts == 1
    assert retried.result_content is None and not retried.is_error
    assert retried.timeline[-1]["event"] == "retried by staff"
    assert callbacks
    again = pairing.mark_running(pair.pk, "test-runner")
    assert again is not None and again.attempts == 2


def test_it_does_not_retry_a_flushed_or_never_run_call(
    conversation: Conversation, staff: Any, owner: Any
) -> None:
    pair = failed_call(conversation)
    with pytest.raises(NotAllowed):
        approvals.retry(pair.pk, owner)
    pairing.flush_ready(conversation.pk)
    with pytest.raises(UserInputError):
        approvals.retry(pair.pk, staff)
    refused = refused_call(conversation)
    with pytest.raises(UserInputError):
        approvals.retry(refused.pk, staff)


def test_it_times_out_an_approved_call_by_its_run_deadline(
    conversation: Conversation, owner: Any
) -> None:
    pair = held_call(conversation, "owner", timeout_s=30)
    approvals.approve(pair.pk, owner)
    later = timezone.now() + dt.timedelta(seconds=31)
    assert pairing.expire_overdue(now=later) == [conversation.pk]
