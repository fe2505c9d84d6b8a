"""The load benchmark's database checks catch what they claim to (fast; part of `make test`)."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from chat.models import Conversation, Message, ToolPair
from tests.bench.load_checks import REJECTED, check

pytestmark = pytest.mark.django_db


@pytest.fixture
def thread(django_user_model: Any) -> Conversation:
    user = django_user_model.objects.create_user("load7", password="x")
    return Conversation.objects.create(owner=user)


def _add(conversation: Conversation, seq: int, kind: str, content: list[Any], **kw: Any) -> Message:
    role = "user" if kind in ("prompt", "tool_results") else "assistant"
    return Message.objects.create(
        conversation=conversation, seq=seq, role=role, kind=kind, content=content, **kw
    )


def _text(text: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": text}]


def test_it_passes_a_thread_where_every_call_is_paired_once(thread: Conversation) -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "calculate", "input": {}}
    _add(thread, 1, "prompt", _text("calculate 2*3"))
    reply = _add(thread, 2, "reply", [*_text("Let me work it out."), use])
    ToolPair.objects.create(
        conversation=thread, message=reply, tool_use_id="toolu_1", tool_name="calculate",
        status="succeeded", flushed_at=timezone.now(),
    )  # fmt: skip
    _add(thread, 3, "tool_calls", [use])
    _add(thread, 4, "tool_results", [{"type": "tool_result", "tool_use_id": "toolu_1"}])
    _add(thread, 5, "reply", _text("It is 6."))
    found = check("load")
    assert found["quiet"] and found["unanswered_prompts"] == 0
    assert found["tool_pairs"] == 1 and found["badly_paired_count"] == 0


def test_it_finds_an_unanswered_message_and_a_refused_request(thread: Conversation) -> None:
    _add(thread, 1, "prompt", _text("hello"))
    _add(thread, 2, "reply", [], status="error", error=f"{REJECTED}: messages: bad")
    found = check("load")
    assert found["unanswered_prompts"] == 1 and not found["quiet"]
    assert found["rejected_by_validator"] == 1


def test_it_finds_a_result_flushed_twice(thread: Conversation) -> None:
    use = {"type": "tool_use", "id": "toolu_2", "name": "calculate", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "toolu_2"}
    reply = _add(thread, 1, "reply", [use])
    ToolPair.objects.create(
        conversation=thread, message=reply, tool_use_id="toolu_2", tool_name="calculate",
        status="succeeded", flushed_at=timezone.now(),
    )  # fmt: skip
    _add(thread, 2, "tool_calls", [use])
    _add(thread, 3, "tool_results", [result])
    _add(thread, 4, "tool_results", [result])
    assert check("load")["badly_paired"] == ["toolu_2"]
