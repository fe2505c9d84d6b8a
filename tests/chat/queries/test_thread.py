"""chat.queries.thread: the page, and what a tab at a cursor (seq, rev) lacks."""

from __future__ import annotations

from typing import Any

import pytest

from chat.models import Conversation, Message, ToolPair
from chat.queries import thread
from chat.services import conversations, messages, pairing

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_tool_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pairing, "enqueue_run", lambda pair_id: None)


def _cursor(conversation: Conversation) -> tuple[int, int]:
    conversation.refresh_from_db()
    return conversation.messages.count(), conversation.rev


def _streaming_reply_with_a_running_tool(conversation: Conversation) -> tuple[Message, ToolPair]:
    messages.post_user_message(conversation.pk, "please use tools")
    reply = messages.start_reply(conversation.pk, answered_seq=1)
    block = {"type": "tool_use", "id": "toolu_1", "name": "calculate", "input": {"expression": "1"}}
    pair = pairing.store_tool_call(conversation.pk, reply.pk, block, 1)
    pairing.mark_running(pair.pk, "test")
    return reply, pair


def test_it_reads_the_whole_page_with_the_highest_seq(conversation: Conversation) -> None:
    messages.post_user_message(conversation.pk, "one")
    messages.post_user_message(conversation.pk, "two")
    views, seq = thread.page(conversation)
    assert [v.message.text for v in views] == ["one", "two"] and seq == 2
    assert all(v.queued for v in views)  # nobody has answered them yet


def test_it_returns_only_messages_after_the_cursor(conversation: Conversation) -> None:
    messages.post_user_message(conversation.pk, "seen")
    seq, rev = _cursor(conversation)
    messages.post_user_message(conversation.pk, "new")
    changes = thread.changes_since(conversation.pk, seq, rev)
    assert changes is not None
    assert [v.message.text for v in changes.new] == ["new"]
    assert changes.changed == [] and changes.pairs == []
    assert (changes.seq, changes.rev) == _cursor(conversation)


def test_it_returns_nothing_new_to_a_tab_that_is_up_to_date(conversation: Conversation) -> None:
    messages.post_user_message(conversation.pk, "seen")
    seq, rev = _cursor(conversation)
    changes = thread.changes_since(conversation.pk, seq, rev)
    assert changes is not None
    assert (changes.new, changes.changed, changes.pairs) == ([], [], [])
    assert (changes.seq, changes.rev) == (seq, rev)


def test_it_returns_messages_changed_since_the_rev(conversation: Conversation) -> None:
    messages.post_user_message(conversation.pk, "hello")
    reply = messages.start_reply(conversation.pk, answered_seq=1)
    seq, rev = _cursor(conversation)
    messages.finish_reply(
        reply.pk,
        content=[{"type": "text", "text": "hi"}],
        stop_reason="end_turn",
        status="complete",
    )
    changes = thread.changes_since(conversation.pk, seq, rev)
    assert changes is not None
    assert changes.new == [] and [v.id for v in changes.changed] == [reply.pk]


def test_it_returns_a_changed_card_of_a_message_the_tab_already_has(
    conversation: Conversation,
) -> None:
    _, pair = _streaming_reply_with_a_running_tool(conversation)
    seq, rev = _cursor(conversation)
    pairing.record_result(pair.pk, status="succeeded", content="1", is_error=False)
    changes = thread.changes_since(conversation.pk, seq, rev)
    assert changes is not None
    assert [p.pk for p in changes.pairs] == [pair.pk] and changes.changed == []


def test_only_a_resync_resends_streaming_replies_and_running_tools(
    conversation: Conversation,
) -> None:
    reply, pair = _streaming_reply_with_a_running_tool(conversation)
    seq, rev = _cursor(conversation)
    routine = thread.changes_since(conversation.pk, seq, rev)
    resync = thread.changes_since(conversation.pk, seq, rev, resync=True)
    assert routine is not None and resync is not None
    assert (routine.changed, routine.pairs) == ([], [])
    assert [v.id for v in resync.changed] == [reply.pk]
    # the running card comes inside its streaming reply, not twice
    assert resync.pairs == [] and [p.pk for p in resync.changed[0].pairs] == [pair.pk]


def test_a_resync_resends_a_running_tool_of_a_finished_reply(conversation: Conversation) -> None:
    reply, pair = _streaming_reply_with_a_running_tool(conversation)
    messages.finish_reply(
        reply.pk, content=reply.content, stop_reason="tool_use", status="complete"
    )
    seq, rev = _cursor(conversation)
    resync = thread.changes_since(conversation.pk, seq, rev, resync=True)
    assert resync is not None
    assert resync.changed == [] and [p.pk for p in resync.pairs] == [pair.pk]


def test_a_doorbell_costs_one_query_when_nothing_changed_and_three_otherwise(
    conversation: Conversation, django_assert_num_queries: Any
) -> None:
    reply, pair = _streaming_reply_with_a_running_tool(conversation)
    seq, rev = _cursor(conversation)
    with django_assert_num_queries(1):
        thread.changes_since(conversation.pk, seq, rev)
    pairing.record_result(pair.pk, status="succeeded", content="1", is_error=False)
    messages.post_user_message(conversation.pk, "and now?")
    with django_assert_num_queries(3):
        changes = thread.changes_since(conversation.pk, seq, rev)
    assert changes is not None
    assert [v.message.text for v in changes.new] == ["and now?"]
    assert [p.pk for p in changes.pairs] == [pair.pk]
    with django_assert_num_queries(3):
        resync = thread.changes_since(conversation.pk, 0, 0, resync=True)
    assert resync is not None
    assert [p.pk for v in resync.new if v.id == reply.pk for p in v.pairs] == [pair.pk]


def test_it_returns_none_for_a_deleted_conversation(conversation: Conversation) -> None:
    messages.post_user_message(conversation.pk, "hello")
    conversations.delete_conversation(conversation.pk)
    assert thread.changes_since(conversation.pk, 0, 0) is None
    assert thread.changes_since(conversation.pk, 0, 0, resync=True) is None


def test_it_shows_the_live_text_of_a_reply_streaming_here(conversation: Any) -> None:
    messages.post_user_message(conversation.pk, "hello")
    reply = messages.start_reply(conversation.pk, answered_seq=1)
    views, _ = thread.page(conversation)
    streaming = next(v for v in views if v.id == reply.pk)
    assert streaming.live_text == "" and streaming.thinking_text == ""
