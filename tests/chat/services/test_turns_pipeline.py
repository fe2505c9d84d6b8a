"""The turn pipeline's database work: one call to begin a turn, one statement to let go."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chat.models import Conversation, GroupBudget, Message, ToolPair, UsageRecord
from chat.services import messages, pairing, turns

pytestmark = pytest.mark.django_db


def _lease(conversation: Any) -> str:
    return Conversation.objects.get(pk=conversation.pk).lease_owner


def test_it_begins_a_turn_in_one_call_and_nothing_when_nothing_waits(conversation: Any) -> None:
    assert turns.begin_turn(conversation.pk) is None
    messages.post_user_message(conversation.pk, "hello")
    turn = turns.begin_turn(conversation.pk)
    assert turn is not None and turn.reply_id is not None
    reply = Message.objects.get(pk=turn.reply_id)
    assert (reply.status, reply.seq, turn.input.last_seq) == (Message.Status.STREAMING, 2, 1)
    fresh = Conversation.objects.get(pk=conversation.pk)
    assert (fresh.answered_seq, fresh.next_seq, fresh.rev) == (1, 3, reply.rev)
    assert fresh.messages.get(seq=1).rev == reply.rev  # the queued prompt shows as answered
    assert turns.begin_turn(conversation.pk) is None  # answered: nothing waits


def test_it_answers_with_a_notice_when_the_owner_is_over_budget(
    conversation: Any, owner: Any
) -> None:
    group = owner.groups.create(name="tight")
    GroupBudget.objects.create(group=group, monthly_tokens=1)
    UsageRecord.objects.create(
        user=owner, conversation=conversation, model="m", input_tokens=5, output_tokens=5
    )
    messages.post_user_message(conversation.pk, "hello")
    turn = turns.begin_turn(conversation.pk)
    assert turn is not None and turn.reply_id is None
    assert conversation.messages.filter(kind=Message.Kind.NOTICE).count() == 1
    assert not conversation.messages.filter(kind=Message.Kind.REPLY).exists()


def test_it_flushes_finished_pairs_when_it_begins(conversation: Any, enqueued: list[int]) -> None:
    messages.post_user_message(conversation.pk, "use tools")
    turn = turns.begin_turn(conversation.pk)
    assert turn is not None and turn.reply_id is not None
    block = {"type": "tool_use", "id": "toolu_1", "name": "calculate", "input": {"expression": "1"}}
    pair = pairing.store_tool_call(conversation.pk, turn.reply_id, block, 0)
    assert not pairing.has_unflushed(conversation.pk)
    pairing.record_result(pair.pk, status="succeeded", content="1", is_error=False)
    assert pairing.has_unflushed(conversation.pk)
    assert turns.begin_turn(conversation.pk) is not None
    assert ToolPair.objects.get(pk=pair.pk).flushed_at is not None
    assert not pairing.has_unflushed(conversation.pk)


def test_it_lets_go_of_the_lease_only_when_nothing_is_due(
    conversation: Any, enqueued: list[int]
) -> None:
    assert turns.claim_lease(conversation.pk, "a")
    assert not turns.release_if_idle(conversation.pk, "b")  # not the holder
    assert turns.release_if_idle(conversation.pk, "a")
    assert _lease(conversation) == ""

    messages.post_user_message(conversation.pk, "hello")
    assert turns.claim_lease(conversation.pk, "a")
    assert not turns.release_if_idle(conversation.pk, "a")  # a user message waits
    assert _lease(conversation) == "a"
    turn = turns.begin_turn(conversation.pk)
    assert turn is not None and turn.reply_id is not None
    assert turns.release_if_idle(conversation.pk, "a")

    assert turns.claim_lease(conversation.pk, "a")
    block = {"type": "tool_use", "id": "toolu_2", "name": "calculate", "input": {"expression": "1"}}
    pair = pairing.store_tool_call(conversation.pk, turn.reply_id, block, 0)
    assert turns.release_if_idle(conversation.pk, "a")  # a running call is not due yet
    assert turns.claim_lease(conversation.pk, "a")
    pairing.record_result(pair.pk, status="succeeded", content="1", is_error=False)
    assert turns.is_due(conversation.pk)
    assert not turns.release_if_idle(conversation.pk, "a")  # its result waits to be flushed
    assert _lease(conversation) == "a"


def test_it_writes_a_snapshot_in_one_statement_and_still_sees_a_stop(conversation: Any) -> None:
    messages.post_user_message(conversation.pk, "hello")
    reply = messages.start_reply(conversation.pk, 1)
    with CaptureQueriesContext(connection) as queries:
        assert messages.save_reply_snapshot(reply.pk, [{"type": "text", "text": "so"}]) is False
    assert len(queries) == 1
    assert messages.request_stop(conversation.pk, reply.pk)
    assert messages.save_reply_snapshot(reply.pk, [{"type": "text", "text": "so far"}]) is True
    assert Message.objects.get(pk=reply.pk).content == [{"type": "text", "text": "so far"}]


def test_it_records_usage_once_per_reply_even_when_finished_twice(conversation: Any) -> None:
    messages.post_user_message(conversation.pk, "hello")
    reply = messages.start_reply(conversation.pk, 1)
    usage = {"input_tokens": 3, "output_tokens": 4}
    for _ in range(2):
        messages.finish_reply(reply.pk, content=[], status=Message.Status.COMPLETE, usage=usage)
    rows = UsageRecord.objects.filter(message=reply)
    assert [(r.input_tokens, r.output_tokens) for r in rows] == [(3, 4)]
    usage = {"input_tokens": 5, "output_tokens": 6}
    messages.finish_reply(reply.pk, content=[], status=Message.Status.COMPLETE, usage=usage)
    assert [(r.input_tokens, r.output_tokens) for r in rows.all()] == [(5, 6)]


def test_its_turn_start_and_end_stay_within_a_query_budget(conversation: Any) -> None:
    messages.post_user_message(conversation.pk, "hello")
    assert turns.claim_lease(conversation.pk, "a")
    with CaptureQueriesContext(connection) as begin:
        turn = turns.begin_turn(conversation.pk)
    assert turn is not None and turn.reply_id is not None
    with CaptureQueriesContext(connection) as finish:
        messages.finish_reply(
            turn.reply_id, content=[], status=Message.Status.COMPLETE, usage={"input_tokens": 1}
        )
    with CaptureQueriesContext(connection) as release:
        assert turns.release_if_idle(conversation.pk, "a")
    # flush check, turn input (conversation, thread, calls, rounds), policies, groups, the MCP
    # tools offered (tools.mcp), budget,
    # start (lock, conversation, prompts, reply); finish (reply with conversation, conversation,
    # reply, usage read and write); one conditional UPDATE to let go. (Plus the savepoints of
    # atomic blocks inside the test's transaction.)
    assert len(begin) <= 17, [q["sql"][:60] for q in begin]
    assert len(finish) <= 8, [q["sql"][:60] for q in finish]
    assert len(release) == 1


def test_it_claims_and_begins_in_one_call(conversation: Any) -> None:
    messages.post_user_message(conversation.pk, "hello")
    assert turns.claim_lease(conversation.pk, "other")
    assert turns.claim_and_begin(conversation.pk, "a") == (False, None)  # held elsewhere
    assert not Message.objects.filter(role=Message.Role.ASSISTANT).exists()
    turns.release_lease(conversation.pk, "other")

    claimed, turn = turns.claim_and_begin(conversation.pk, "a")
    assert claimed and turn is not None and turn.reply_id is not None
    assert _lease(conversation) == "a"


def test_a_failure_to_begin_lets_the_claimed_lease_go(
    conversation: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    messages.post_user_message(conversation.pk, "hello")

    def broken(conversation_id: int) -> None:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(turns, "begin_turn", broken)
    with pytest.raises(RuntimeError):
        turns.claim_and_begin(conversation.pk, "a")
    assert _lease(conversation) == ""  # the next runner need not wait for it to expire


def test_a_reply_ends_and_lets_go_in_one_call_unless_something_waits(
    conversation: Any,
) -> None:
    done = {"content": [{"type": "text", "text": "hi"}], "status": Message.Status.COMPLETE}
    messages.post_user_message(conversation.pk, "hello")
    assert turns.claim_lease(conversation.pk, "a")
    turn = turns.begin_turn(conversation.pk)
    assert turn is not None and turn.reply_id is not None
    messages.post_user_message(conversation.pk, "and another thing")  # arrives mid-reply
    assert not turns.finish_and_release(turn.reply_id, conversation.pk, "a", **done)
    assert Message.objects.get(pk=turn.reply_id).status == Message.Status.COMPLETE
    assert _lease(conversation) == "a"  # the runner answers the second message next
    turn = turns.begin_turn(conversation.pk)
    assert turn is not None and turn.reply_id is not None
    assert turns.finish_and_release(turn.reply_id, conversation.pk, "a", **done)
    assert _lease(conversation) == ""
