"""The pairing service's state changes, driven directly (no event loop, no tool runs)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from chat.models import Message, ToolPair
from chat.services import messages, pairing, turns

pytestmark = pytest.mark.django_db


def _reply(conversation: Any) -> Message:
    messages.post_user_message(conversation.pk, "please use tools")
    return messages.start_reply(conversation.pk, answered_seq=conversation.messages.count())


def _call(conversation: Any, reply: Message, name: str, args: Any, n: int = 1) -> ToolPair:
    block = {"type": "tool_use", "id": f"toolu_{reply.pk}_{n}", "name": name, "input": args}
    return pairing.store_tool_call(conversation.pk, reply.pk, block, n)


def test_it_queues_a_valid_call_and_starts_it_after_commit(
    conversation: Any, enqueued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    reply = _reply(conversation)
    with django_capture_on_commit_callbacks(execute=True):
        pair = _call(conversation, reply, "calculate", {"expression": "2+2"})
    assert pair.status == ToolPair.Status.QUEUED and pair.deadline_at is not None
    assert enqueued == [pair.pk]


def test_it_answers_an_unknown_tool_with_an_error_naming_the_real_ones(
    conversation: Any, enqueued: list[int]
) -> None:
    pair = _call(conversation, _reply(conversation), "rm_rf", {})
    assert pair.status == ToolPair.Status.FAILED and pair.is_error
    assert "Unknown tool 'rm_rf'" in pair.result_content and "calculate" in pair.result_content
    assert enqueued == []


def test_it_answers_invalid_input_with_what_was_wrong(
    conversation: Any, enqueued: list[int]
) -> None:
    pair = _call(conversation, _reply(conversation), "calculate", {"expr": 1})
    assert pair.decision == "invalid input" and pair.is_error
    assert "expression" in pair.result_content


@override_settings(TANDEM_MAX_TOOL_ROUNDS=2)
def test_it_caps_tool_rounds_per_user_message_and_tells_the_user(
    conversation: Any, enqueued: list[int]
) -> None:
    messages.post_user_message(conversation.pk, "go")
    outcomes = []
    for n in range(3):
        reply = messages.start_reply(conversation.pk, answered_seq=conversation.messages.count())
        outcomes.append(_call(conversation, reply, "calculate", {"expression": "1"}, n).status)
    assert outcomes == ["queued", "queued", "failed"]
    notice = conversation.messages.get(kind=Message.Kind.NOTICE)
    assert "limit of 2 tool rounds" in notice.text


@override_settings(TANDEM_MAX_INVALID_TOOL_CALLS=2)
def test_it_stops_repeated_invalid_calls(conversation: Any, enqueued: list[int]) -> None:
    reply = _reply(conversation)
    pairs = [_call(conversation, reply, "calculate", {}, n) for n in range(3)]
    assert [p.decision for p in pairs] == ["invalid input", "invalid input", "refused"]
    assert "Too many invalid tool calls" in pairs[2].result_content


def test_it_times_out_a_pair_and_never_flushes_a_late_result_twice(
    conversation: Any, enqueued: list[int]
) -> None:
    pair = _call(conversation, _reply(conversation), "tool_buffer_demo", {"seconds": 1})
    touched = pairing.expire_overdue(now=timezone.now() + dt.timedelta(days=2))
    assert touched == [conversation.pk]
    pair.refresh_from_db()
    assert pair.status == ToolPair.Status.TIMED_OUT and pair.is_error
    assert "timed out" in pair.result_content
    assert (
        pairing.record_result(pair.pk, status="succeeded", content="late", is_error=False) is None
    )
    pair.refresh_from_db()
    assert pair.timeline[-1]["event"] == "late result ignored"
    assert len(pairing.flush_ready(conversation.pk)) == 1
    assert pairing.flush_ready(conversation.pk) == []
    results = conversation.messages.get(kind=Message.Kind.TOOL_RESULTS).content
    assert results == [
        {
            "type": "tool_result",
            "tool_use_id": pair.tool_use_id,
            "content": pair.result_content,
            "is_error": True,
        }
    ]


def test_it_flushes_results_that_arrived_together_in_one_pair_of_turns(
    conversation: Any, enqueued: list[int]
) -> None:
    reply = _reply(conversation)
    first = _call(conversation, reply, "calculate", {"expression": "1"}, 1)
    second = _call(conversation, reply, "calculate", {"expression": "2"}, 2)
    for pair in (second, first):
        pairing.record_result(pair.pk, status="succeeded", content="ok", is_error=False)
    flushed = pairing.flush_ready(conversation.pk)
    assert [p.pk for p in flushed] == [first.pk, second.pk]
    calls = conversation.messages.get(kind=Message.Kind.TOOL_CALLS)
    assert [b["id"] for b in calls.content] == [first.tool_use_id, second.tool_use_id]


def test_it_lets_one_holder_have_the_lease_until_it_expires(conversation: Any) -> None:
    assert turns.claim_lease(conversation.pk, "a")
    assert not turns.claim_lease(conversation.pk, "b")
    assert turns.claim_lease(conversation.pk, "a")  # re-entrant for its holder
    type(conversation).objects.filter(pk=conversation.pk).update(
        lease_expires_at=timezone.now() - dt.timedelta(seconds=1)
    )
    assert turns.claim_lease(conversation.pk, "b")
    turns.release_lease(conversation.pk, "a")  # not the holder: no effect
    assert not turns.claim_lease(conversation.pk, "a")
    turns.release_lease(conversation.pk, "b")
    assert turns.claim_lease(conversation.pk, "a")


def test_it_says_a_turn_is_due_for_new_user_words_or_finished_pairs(
    conversation: Any, enqueued: list[int]
) -> None:
    assert not turns.is_due(conversation.pk)
    reply = _reply(conversation)
    assert not turns.is_due(conversation.pk)
    pair = _call(conversation, reply, "calculate", {"expression": "1"})
    assert not turns.is_due(conversation.pk)
    pairing.record_result(pair.pk, status="succeeded", content="1", is_error=False)
    assert turns.is_due(conversation.pk)


@override_settings(TANDEM_MAX_TOOL_ROUNDS=3, TANDEM_MAX_INVALID_TOOL_CALLS=2)
def test_it_states_the_tool_caps_once_for_storing_and_offering() -> None:
    assert [pairing.round_cap_reached(n) for n in (3, 4)] == [False, True]
    assert [pairing.invalid_cap_reached(n) for n in (1, 2)] == [False, True]
