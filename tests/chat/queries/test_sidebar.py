"""chat.queries.sidebar: a user's own conversations, newest first, with their live state."""

from __future__ import annotations

from typing import Any

import pytest

from chat.models import Conversation, ToolPair
from chat.queries import sidebar
from chat.services import conversations, messages, pairing

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_tool_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pairing, "enqueue_run", lambda pair_id: None)


def _call(conversation: Conversation, n: int) -> ToolPair:
    reply = messages.start_reply(conversation.pk, answered_seq=conversation.messages.count())
    block = {
        "type": "tool_use",
        "id": f"toolu_{n}",
        "name": "calculate",
        "input": {"expression": "1"},
    }
    return pairing.store_tool_call(conversation.pk, reply.pk, block, 0)


def test_it_lists_only_the_users_own_conversations_newest_first(owner: Any, outsider: Any) -> None:
    older = conversations.create_conversation(owner, title="older")
    newer = conversations.create_conversation(owner, title="newer")
    conversations.create_conversation(outsider, title="not yours")
    context = sidebar.context(owner.pk, current=older.pk)
    assert [c.pk for c in context["conversations"]] == [newer.pk, older.pk]
    assert context["current_id"] == older.pk


def test_it_shows_a_streaming_reply_and_counts_running_tools(conversation: Conversation) -> None:
    messages.post_user_message(conversation.pk, "go")
    _call(conversation, 1)
    _call(conversation, 2)
    (row,) = sidebar.for_user(conversation.owner_id)
    assert row.is_streaming and row.tools_running == 2 and row.awaiting_approval == 0


def test_it_shows_a_quiet_conversation_as_quiet(conversation: Conversation) -> None:
    messages.post_user_message(conversation.pk, "hello")
    (row,) = sidebar.for_user(conversation.owner_id)
    assert (row.is_streaming, row.tools_running, row.awaiting_approval) == (False, 0, 0)
