"""chat.queries.access: a conversation and its tool calls are visible to their owner only."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.http import Http404

from chat.models import Conversation
from chat.queries import access
from chat.services import messages, pairing

pytestmark = pytest.mark.django_db


def _pair_id(conversation: Conversation, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(pairing, "enqueue_run", lambda pair_id: None)
    messages.post_user_message(conversation.pk, "go")
    reply = messages.start_reply(conversation.pk, answered_seq=1)
    block = {"type": "tool_use", "id": "toolu_1", "name": "calculate", "input": {"expression": "1"}}
    return pairing.store_tool_call(conversation.pk, reply.pk, block, 0).pk


def test_it_gives_the_owner_their_conversation(owner: Any, conversation: Conversation) -> None:
    assert access.owned_conversation(owner, conversation.pk) == conversation
    assert access.get_owned_or_404(owner, conversation.pk) == conversation


def test_it_hides_a_conversation_from_an_outsider_and_a_visitor(
    outsider: Any, conversation: Conversation
) -> None:
    for user in (outsider, AnonymousUser()):
        assert access.owned_conversation(user, conversation.pk) is None
        with pytest.raises(Http404):
            access.get_owned_or_404(user, conversation.pk)


def test_it_gives_a_tool_call_only_to_its_owner_in_its_conversation(
    owner: Any, outsider: Any, conversation: Conversation, monkeypatch: pytest.MonkeyPatch
) -> None:
    pair_id = _pair_id(conversation, monkeypatch)
    owned = access.owned_pair(owner, conversation.pk, pair_id)
    assert owned is not None and owned.pk == pair_id
    assert access.owned_pair(outsider, conversation.pk, pair_id) is None
    assert access.owned_pair(owner, conversation.pk + 1, pair_id) is None


@pytest.mark.parametrize("pair_id", ["1", 1.0, True, None])
def test_it_refuses_a_pair_id_that_is_not_a_whole_number(
    owner: Any, conversation: Conversation, pair_id: object
) -> None:
    assert access.owned_pair(owner, conversation.pk, pair_id) is None
