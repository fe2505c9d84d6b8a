"""Policies enforced on the server: what is offered, and what a stored call may do."""

from __future__ import annotations

import datetime as dt
import re
from itertools import count
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import override_settings
from django.utils import timezone

from chat.models import Conversation, Message, ToolPair
from chat.services import messages, pairing, turns
from tools.models import ToolPolicy

pytestmark = pytest.mark.django_db

_ids = count(1)


def set_policy(name: str, **fields: Any) -> ToolPolicy:
    ToolPolicy.objects.filter(tool_name=name).update(**fields)
    return ToolPolicy.objects.get(tool_name=name)


def new_reply(conversation: Conversation, text: str | None = "go on") -> Message:
    """A reply streaming an answer to everything so far (after a new prompt, if text)."""
    if text is not None:
        messages.post_user_message(conversation.pk, text)
    last = conversation.messages.order_by("-seq").values_list("seq", flat=True).first() or 0
    return messages.start_reply(conversation.pk, last)


def call(conversation: Conversation, reply: Message, name: str, **tool_input: Any) -> ToolPair:
    block = {"type": "tool_use", "id": f"toolu_{next(_ids):04d}", "name": name, "input": tool_input}
    return pairing.store_tool_call(conversation.pk, reply.pk, block, 0)


def offered(conversation: Conversation) -> set[str]:
    messages.post_user_message(conversation.pk, "which tools?")
    turn = turns.load_turn_input(conversation.pk)
    assert turn is not None
    return {str(t["name"]) for t in turn.request.get("tools", [])}  # type: ignore[attr-defined]


def finish_and_flush(pair: ToolPair) -> None:
    pairing.record_result(pair.pk, status="succeeded", content="done", is_error=False)
    assert pairing.flush_ready(pair.conversation_id)


def test_it_offers_every_enabled_tool_by_default(conversation: Conversation) -> None:
    assert {"calculate", "current_time", "tool_buffer_demo", "unit_convert"} <= offered(
        conversation
    )


def test_it_does_not_offer_a_disabled_tool(conversation: Conversation) -> None:
    set_policy("calculate", enabled=False)
    assert "calculate" not in offered(conversation)
    assert "current_time" in offered(conversation)


def test_it_refuses_a_call_to_a_disabled_tool_without_running_it(
    conversation: Conversation,
) -> None:
    set_policy("calculate", enabled=False)
    pair = call(conversation, new_reply(conversation), "calculate", expression="1+1")
    assert pair.status == ToolPair.Status.DENIED and pair.is_error
    assert pair.decision == "refused: tool disabled"
    assert "switched off" in str(pair.result_content)
    assert pair.attempts == 0 and pair.started_at is None


def test_it_does_not_offer_or_run_a_tool_outside_the_owners_groups(
    conversation: Conversation, owner: Any
) -> None:
    group = Group.objects.create(name="finance")
    set_policy("calculate").allowed_groups.add(group)
    assert "calculate" not in offered(conversation)
    pair = call(conversation, new_reply(conversation), "calculate", expression="1+1")
    assert pair.status == ToolPair.Status.DENIED
    assert pair.decision == "refused: not allowed for this user"
    owner.groups.add(group)
    assert "calculate" in offered(conversation)
    allowed = call(conversation, new_reply(conversation), "calculate", expression="1+1")
    assert allowed.status == ToolPair.Status.QUEUED and allowed.decision == "allowed"


def test_it_allows_a_chain_to_a_listed_target(conversation: Conversation) -> None:
    set_policy("current_time").chain_targets.add(ToolPolicy.objects.get(tool_name="calculate"))
    first = call(conversation, new_reply(conversation), "current_time")
    finish_and_flush(first)
    chained = call(conversation, new_reply(conversation, text=None), "calculate", expression="2*3")
    assert chained.status == ToolPair.Status.QUEUED and chained.decision == "allowed"


def test_it_refuses_a_chain_the_first_tool_may_not_lead_to(conversation: Conversation) -> None:
    set_policy("current_time").chain_targets.add(ToolPolicy.objects.get(tool_name="calculate"))
    first = call(conversation, new_reply(conversation), "current_time")
    finish_and_flush(first)
    chained = call(conversation, new_reply(conversation, text=None), "unit_convert")
    assert chained.status == ToolPair.Status.DENIED and chained.is_error
    assert chained.decision == "refused: chain current_time -> unit_convert"
    assert "tool chain rule" in str(chained.result_content)


def test_it_refuses_any_chain_after_a_tool_that_may_not_start_one(
    conversation: Conversation,
) -> None:
    set_policy("current_time", may_start_chain=False)
    finish_and_flush(call(conversation, new_reply(conversation), "current_time"))
    chained = call(conversation, new_reply(conversation, text=None), "calculate", expression="1")
    assert chained.decision == "refused: chain current_time -> calculate"


def test_it_does_not_chain_a_call_the_user_asked_for_after_the_result(
    conversation: Conversation,
) -> None:
    set_policy("current_time", may_start_chain=False)
    finish_and_flush(call(conversation, new_reply(conversation), "current_time"))
    asked = call(
        conversation, new_reply(conversation, "now add 1+1"), "calculate", expression="1+1"
    )
    assert asked.status == ToolPair.Status.QUEUED


def test_it_holds_a_call_for_the_owners_approval(conversation: Conversation) -> None:
    set_policy("calculate", approval="owner")
    pair = call(conversation, new_reply(conversation), "calculate", expression="1+1")
    assert pair.status == ToolPair.Status.AWAITING_APPROVAL
    assert pair.decision == "awaiting owner approval"
    assert [e["event"] for e in pair.timeline] == ["requested", "awaiting owner approval"]
    assert not pairing.ready_to_flush(conversation.pk)


def test_it_names_a_held_call_in_the_pending_note(conversation: Conversation) -> None:
    set_policy("calculate", approval="staff")
    pair = call(conversation, new_reply(conversation), "calculate", expression="1+1")
    messages.post_user_message(conversation.pk, "still there?")
    turn = turns.load_turn_input(conversation.pk)
    assert turn is not None
    last_turn = turn.request["messages"][-1]  # type: ignore[index]
    assert f"calculate ({pair.tool_use_id}, awaiting approval)" in str(last_turn)


def test_it_holds_a_call_for_staff_approval(conversation: Conversation) -> None:
    set_policy("calculate", approval="staff")
    pair = call(conversation, new_reply(conversation), "calculate", expression="1+1")
    assert pair.status == ToolPair.Status.AWAITING_APPROVAL
    assert pair.decision == "awaiting staff approval"


def test_it_refuses_invalid_input_before_asking_anyone(conversation: Conversation) -> None:
    set_policy("calculate", approval="owner")
    pair = call(conversation, new_reply(conversation), "calculate", expression=5)
    assert pair.status == ToolPair.Status.FAILED and pair.decision == "invalid input"


@override_settings(TANDEM_APPROVAL_TIMEOUT_S=86400.0)
def test_it_times_out_a_call_waiting_for_approval_after_a_day(
    conversation: Conversation,
) -> None:
    set_policy("calculate", approval="staff", timeout_s=60)
    pair = call(conversation, new_reply(conversation), "calculate", expression="1+1")
    now = timezone.now()
    assert pairing.expire_overdue(now=now + dt.timedelta(hours=1)) == []
    assert pairing.expire_overdue(now=now + dt.timedelta(days=1, seconds=5)) == [conversation.pk]
    pair.refresh_from_db()
    assert pair.status == ToolPair.Status.TIMED_OUT and pair.is_error
    assert re.search(r"waited 86(399|400) s for approval and never ran", str(pair.result_content))
    assert pairing.ready_to_flush(conversation.pk)


def test_it_counts_the_wait_toward_the_timeout_when_the_policy_says_so(
    conversation: Conversation,
) -> None:
    set_policy("calculate", approval="owner", timeout_s=60, approval_counts_toward_timeout=True)
    pair = call(conversation, new_reply(conversation), "calculate", expression="1+1")
    assert pairing.expire_overdue(now=timezone.now() + dt.timedelta(seconds=61)) == [
        conversation.pk
    ]
    pair.refresh_from_db()
    assert pair.status == ToolPair.Status.TIMED_OUT


def test_it_uses_the_policy_timeout_for_the_run_deadline(conversation: Conversation) -> None:
    set_policy("calculate", timeout_s=42)
    pair = call(conversation, new_reply(conversation), "calculate", expression="1+1")
    assert pair.deadline_at is not None
    assert 41 <= (pair.deadline_at - pair.requested_at).total_seconds() <= 43
