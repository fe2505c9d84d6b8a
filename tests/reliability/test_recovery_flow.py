"""Recovery with the real engine: a conversation left mid-turn by a dead process goes on."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from channels.db import database_sync_to_async as db

from chat.modelapi import client as model_client
from chat.models import Conversation, Message, ToolPair
from chat.runtime import engine, sweeper
from chat.services import turns
from tests.conftest import frames_until
from tests.reliability.helpers import add, dead_instance, eventually, hold_lease, running_pair
from tools.registry import registry, spec_from_function

pytestmark = pytest.mark.django_db(transaction=True)


async def write_once(text: str) -> str:
    """Append a line to a ledger (a test tool that must not run twice)."""
    return text


@pytest.fixture(autouse=True)
def _unsafe_tool() -> Iterator[None]:
    with registry.temporarily(spec_from_function(write_once)):
        yield


def _left_mid_reply(conversation: Conversation, holder: str) -> Message:
    """A reply half written by ``holder`` (snapshot in the database), holding the lease."""
    add(conversation, "user", "prompt", "write a long answer about kites")
    reply = add(conversation, "assistant", "reply", "Kites are old. ", status="streaming")
    hold_lease(conversation, holder)
    return reply


async def _kinds(conversation: Conversation) -> list[tuple[str, str]]:
    query = Message.objects.filter(conversation=conversation).order_by("seq")
    return [(m.kind, m.status) async for m in query]


async def test_it_recovers_a_reply_cut_by_a_restart_at_once_and_answers_the_next_message(
    connect: Any, owner: Any, conversation: Conversation
) -> None:
    rejected = model_client.simulator().stats.snapshot()["rejected_invalid"]
    reply = await db(_left_mid_reply)(conversation, dead_instance())
    await sweeper.sweep_once(first=True)
    await reply.arefresh_from_db()
    assert reply.status == Message.Status.INTERRUPTED and reply.text == "Kites are old. "
    socket = await connect(owner, conversation.pk)
    await socket.send_json_to({"type": "send", "text": "and now a short one"})
    await frames_until(socket, lambda f: "kind-reply status-complete" in f)
    await engine.idle()
    assert await _kinds(conversation) == [
        ("prompt", "complete"),
        ("reply", "interrupted"),
        ("prompt", "complete"),
        ("reply", "complete"),
    ]
    assert model_client.simulator().stats.snapshot()["rejected_invalid"] == rejected


async def test_it_waits_for_a_foreign_lease_to_expire_then_goes_on(
    running_engine: None, conversation: Conversation, settings: Any
) -> None:
    settings.TANDEM_LEASE_SECONDS = 0.3
    reply = await db(_left_mid_reply)(conversation, "")
    # Another machine holds the lease: it cannot be proven dead, only left to expire.
    assert await db(turns.claim_lease)(conversation.pk, "elsewhere:4242:f0reign0")
    await db(add)(conversation, "user", "prompt", "are you there?", answered=False)
    await sweeper.sweep_once(first=True)
    await reply.arefresh_from_db()
    assert reply.status == Message.Status.STREAMING  # the lease is live: not ours to touch

    async def answered() -> bool:
        return await Message.objects.filter(
            conversation=conversation, kind="reply", status="complete"
        ).aexists()

    await eventually(answered)  # the sweeper notices the expiry on its own
    await engine.idle()
    assert await _kinds(conversation) == [
        ("prompt", "complete"),
        ("reply", "interrupted"),
        ("prompt", "complete"),
        ("reply", "complete"),
    ]


async def test_it_reruns_or_answers_tools_cut_by_a_restart_then_continues(
    running_engine: None, conversation: Conversation
) -> None:
    dead = dead_instance()

    def left_running() -> tuple[ToolPair, ToolPair]:
        add(conversation, "user", "prompt", "calculate 2+3 and write it down")
        reply = add(conversation, "assistant", "reply", "Working.", stop_reason="tool_use")
        safe = running_pair(reply, "calculate", {"expression": "2+3"}, dead)
        unsafe = running_pair(reply, "write_once", {"text": "x"}, dead)
        return safe, unsafe

    safe, unsafe = await db(left_running)()
    await sweeper.sweep_once(first=True)

    async def all_flushed() -> bool:
        return not await ToolPair.objects.filter(
            conversation=conversation, flushed_at__isnull=True
        ).aexists()

    await eventually(all_flushed)
    await engine.idle()
    await safe.arefresh_from_db()
    await unsafe.arefresh_from_db()
    assert safe.status == ToolPair.Status.SUCCEEDED and safe.attempts == 2
    assert safe.result_content == "5"
    assert unsafe.status == ToolPair.Status.FAILED and unsafe.is_error
    assert "interrupted by a server restart" in unsafe.result_content
    kinds = await _kinds(conversation)
    assert kinds[-3:] == [
        ("tool_calls", "complete"),
        ("tool_results", "complete"),
        ("reply", "complete"),
    ]
