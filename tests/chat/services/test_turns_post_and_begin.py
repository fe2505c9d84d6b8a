"""turns.post_and_begin: a message from a socket is stored and its turn begun in one hop."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async as db

from chat.models import Conversation, Message
from chat.runtime import engine, events
from chat.services import turns
from chat.services.errors import UserInputError

pytestmark = pytest.mark.django_db(transaction=True)


async def test_the_hop_that_stores_a_message_begins_its_turn(
    running_engine: None, conversation: Conversation, monkeypatch: pytest.MonkeyPatch
) -> None:
    rung: list[int] = []
    send_bell = events._send_bell
    monkeypatch.setattr(events, "_send_bell", lambda c, o: rung.append(c) or send_bell(c, o))
    message = await db(turns.post_and_begin)(conversation.pk, "hello there")
    assert rung == [conversation.pk]  # stored and begun: one doorbell for both, from the hop
    # Right after the hop: the lease is this process's and the reply streams already.
    fresh = await Conversation.objects.aget(pk=conversation.pk)
    reply = await Message.objects.aget(conversation=conversation, kind=Message.Kind.REPLY)
    assert fresh.lease_owner == engine.INSTANCE_ID
    assert (message.seq, reply.seq) == (1, 2)
    assert reply.status in (Message.Status.STREAMING, Message.Status.COMPLETE)
    await engine.idle()
    await reply.arefresh_from_db()
    fresh = await Conversation.objects.aget(pk=conversation.pk)
    assert (reply.status, fresh.lease_owner) == (Message.Status.COMPLETE, "")


async def test_a_message_while_its_runner_streams_is_answered_by_the_next_turn(
    running_engine: None, conversation: Conversation, monkeypatch: pytest.MonkeyPatch
) -> None:
    reserved: list[bool] = []
    reserve = engine.reserve
    monkeypatch.setattr(engine, "reserve", lambda c: reserved.append(reserve(c)) or reserved[-1])
    await db(turns.post_and_begin)(conversation.pk, "write a long story")
    second = await db(turns.post_and_begin)(conversation.pk, "and a short one")
    assert reserved == [True, False]  # the second found the first one's runner streaming
    await engine.idle()
    replies = [
        m async for m in Message.objects.filter(conversation=conversation, kind=Message.Kind.REPLY)
    ]
    assert [r.status for r in replies] == [Message.Status.COMPLETE] * 2
    fresh = await Conversation.objects.aget(pk=conversation.pk)
    assert (fresh.answered_seq, fresh.lease_owner) == (second.seq, "")  # both answered


async def test_a_lease_held_elsewhere_leaves_the_turn_to_its_holder(
    running_engine: None, conversation: Conversation
) -> None:
    assert await db(turns.claim_lease)(conversation.pk, "another-process")
    message = await db(turns.post_and_begin)(conversation.pk, "hello")
    await engine.idle()
    assert message.pk is not None  # stored all the same
    assert not await Message.objects.filter(kind=Message.Kind.REPLY).aexists()
    assert not engine._reserved


async def test_a_refused_message_stores_nothing_and_reserves_nothing(
    running_engine: None, conversation: Conversation
) -> None:
    with pytest.raises(UserInputError):
        await db(turns.post_and_begin)(conversation.pk, "   ")
    assert not await Message.objects.aexists()
    assert not engine._reserved


def test_without_a_server_loop_it_stores_and_kicks(
    conversation: Conversation, monkeypatch: pytest.MonkeyPatch
) -> None:
    kicked: list[int] = []
    monkeypatch.setattr(engine, "kick", kicked.append)
    turns.post_and_begin(conversation.pk, "hello")  # a management command, a sync caller
    fresh = Conversation.objects.get(pk=conversation.pk)
    assert (fresh.lease_owner, fresh.messages.count(), kicked) == ("", 1, [conversation.pk])


async def test_a_loop_gone_before_the_turn_is_adopted_lets_the_reservation_go(
    running_engine: None, conversation: Conversation, monkeypatch: pytest.MonkeyPatch
) -> None:
    kicked: list[int] = []
    monkeypatch.setattr(engine, "adopt", lambda conversation_id, begun: False)
    monkeypatch.setattr(engine, "kick", kicked.append)
    message = await db(turns.post_and_begin)(conversation.pk, "hello")
    assert message.pk is not None and kicked == [conversation.pk]
    assert not engine._reserved  # later kicks start runners again
