"""Start-up recovery, driven directly: leases and tool calls left behind by dead processes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from chat.models import Conversation, Message, ToolPair
from chat.runtime import engine
from chat.services import recovery
from tests.reliability.helpers import HOST, add, dead_instance, hold_lease, running_pair
from tools.registry import registry, spec_from_function

pytestmark = pytest.mark.django_db


async def write_once(text: str) -> str:
    """Append a line to a ledger (a test tool that must not run twice)."""
    return text


@pytest.fixture(autouse=True)
def _unsafe_tool() -> Iterator[None]:
    with registry.temporarily(spec_from_function(write_once)):
        yield


@pytest.fixture
def reply(conversation: Conversation) -> Message:
    add(conversation, "user", "prompt", "do things")
    return add(conversation, "assistant", "reply", "On it.", stop_reason="tool_use")


def _lease(conversation: Conversation) -> str:
    return Conversation.objects.get(pk=conversation.pk).lease_owner


def test_it_releases_a_lease_held_by_a_dead_process_on_this_host(
    conversation: Conversation,
) -> None:
    hold_lease(conversation, dead_instance())
    assert recovery.release_dead_leases(engine.INSTANCE_ID) == [conversation.pk]
    assert _lease(conversation) == ""


def test_it_releases_a_lease_of_an_earlier_life_of_this_process_id(
    conversation: Conversation,
) -> None:
    hold_lease(conversation, f"{HOST}:{os.getpid()}:0ldl1fe0")
    assert recovery.release_dead_leases(engine.INSTANCE_ID) == [conversation.pk]


@pytest.mark.parametrize(
    "holder",
    [f"{HOST}:{os.getppid()}:a11ve000", "elsewhere:12345:f0reign0", "garbage", "me"],
)
def test_it_leaves_leases_it_cannot_prove_dead(conversation: Conversation, holder: str) -> None:
    holder = engine.INSTANCE_ID if holder == "me" else holder
    hold_lease(conversation, holder)
    assert recovery.release_dead_leases(engine.INSTANCE_ID) == []
    assert _lease(conversation) == holder


def test_it_reruns_a_call_that_is_safe_to_repeat(
    reply: Message, enqueued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    pair = running_pair(reply, "calculate", {"expression": "2+3"}, dead_instance())
    with django_capture_on_commit_callbacks(execute=True):
        touched = recovery.restart_recovery(set(), engine.INSTANCE_ID)
    assert touched == [reply.conversation_id]
    pair.refresh_from_db()
    assert pair.status == ToolPair.Status.QUEUED and pair.runner == ""
    assert pair.timeline[-1]["event"] == "re-run after a server restart"
    assert enqueued.count(pair.pk) >= 1


def test_it_answers_a_call_that_is_not_safe_to_repeat_with_an_error(
    reply: Message, enqueued: list[int]
) -> None:
    pair = running_pair(reply, "write_once", {"text": "x"}, dead_instance())
    recovery.restart_recovery(set(), engine.INSTANCE_ID)
    pair.refresh_from_db()
    assert pair.status == ToolPair.Status.FAILED and pair.is_error
    assert "interrupted by a server restart" in pair.result_content
    assert "not safe to run twice" in pair.result_content
    assert enqueued == []


def test_it_stops_rerunning_a_safe_call_that_keeps_dying(
    reply: Message, enqueued: list[int]
) -> None:
    pair = running_pair(reply, "calculate", {"expression": "2+3"}, dead_instance())
    ToolPair.objects.filter(pk=pair.pk).update(attempts=recovery.MAX_RUNS)
    recovery.restart_recovery(set(), engine.INSTANCE_ID)
    pair.refresh_from_db()
    assert pair.status == ToolPair.Status.FAILED
    assert f"already ran {recovery.MAX_RUNS} times" in pair.result_content


def test_it_leaves_calls_of_live_processes_alone(reply: Message, enqueued: list[int]) -> None:
    live = running_pair(reply, "write_once", {"text": "x"}, f"{HOST}:{os.getppid()}:a11ve000")
    recovery.restart_recovery(set(), engine.INSTANCE_ID)
    live.refresh_from_db()
    assert live.status == ToolPair.Status.RUNNING


def test_it_enqueues_calls_that_were_queued_when_the_process_died_at_once(
    reply: Message, enqueued: list[int]
) -> None:
    pair = running_pair(reply, "calculate", {"expression": "1"}, "")
    ToolPair.objects.filter(pk=pair.pk).update(status=ToolPair.Status.QUEUED)
    recovery.restart_recovery(set(), engine.INSTANCE_ID)
    assert enqueued == [pair.pk]


def test_it_marks_a_reply_interrupted_only_once_its_lease_is_gone(reply: Message) -> None:
    Message.objects.filter(pk=reply.pk).update(status=Message.Status.STREAMING)
    hold_lease(reply.conversation, dead_instance())
    assert recovery.orphaned_replies() == []
    recovery.release_dead_leases(engine.INSTANCE_ID)
    assert recovery.orphaned_replies() == [reply.conversation_id]
    reply.refresh_from_db()
    assert reply.status == Message.Status.INTERRUPTED and reply.text == "On it."
    assert reply.error == "The server restarted while this reply was being written."


def test_it_drops_unsigned_thinking_from_a_reply_it_marks_interrupted(reply: Message) -> None:
    cut = [{"type": "thinking", "thinking": "Hmm, let me", "signature": ""}]
    signed = [{"type": "thinking", "thinking": "Done.", "signature": "c2ln"}]
    Message.objects.filter(pk=reply.pk).update(
        status=Message.Status.STREAMING, content=signed + cut + reply.content
    )
    recovery.orphaned_replies()
    reply.refresh_from_db()
    assert [b["type"] for b in reply.content] == ["thinking", "text"]
    assert reply.content[0] == signed[0]
