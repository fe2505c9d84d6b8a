"""The model API fails: retried visibly before the stream starts, kept and marked after."""

from __future__ import annotations

from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from chat.modelapi import client as model_client
from chat.modelapi import retry
from chat.models import Message
from chat.runtime import engine
from chat.simulator import Fault, push_fault
from tests.conftest import frames_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "BASE_DELAY_S", 0.01)


class Requests:
    """Requests the process's simulator answered, and refused as invalid, since creation."""

    def __init__(self) -> None:
        self.start = self._now()

    @staticmethod
    def _now() -> tuple[int, int]:
        stats = model_client.simulator().stats.snapshot()
        return stats["requests"], stats["rejected_invalid"]

    def since(self) -> tuple[int, int]:
        now = self._now()
        return now[0] - self.start[0], now[1] - self.start[1]


def _complete(frame: str) -> bool:
    return "kind-reply status-complete" in frame


def _failed(frame: str) -> bool:
    return "kind-reply status-error" in frame


async def _replies(conversation: Any) -> list[Message]:
    query = Message.objects.filter(conversation=conversation, kind="reply").order_by("seq")
    return [m async for m in query]


async def _send(socket: WebsocketCommunicator, text: str) -> None:
    await socket.send_json_to({"type": "send", "text": text})


@pytest.mark.parametrize("kind", ["429", "500", "529"])
async def test_it_retries_a_failure_before_the_stream_and_shows_it(
    connect: Any, owner: Any, conversation: Any, kind: str
) -> None:
    requests = Requests()
    socket = await connect(owner, conversation.pk)
    # A wait long enough that the doorbell for the note is seen even on a busy machine.
    await _send(socket, f"hello [[sim:fail={kind},retry_after=1]]")
    frames = await frames_until(socket, _complete)
    assert any("Retrying… (attempt 2 of 3)" in f for f in frames)
    await engine.idle()
    [reply] = await _replies(conversation)
    assert reply.status == Message.Status.COMPLETE and reply.error == "" and reply.text
    assert requests.since() == (2, 0)


async def test_it_shows_the_retry_note_to_a_tab_that_connects_while_it_waits(
    connect: Any, owner: Any, conversation: Any
) -> None:
    first = await connect(owner, conversation.pk)
    await _send(first, "hello [[sim:fail=429,retry_after=2]]")
    await frames_until(first, lambda f: "Retrying…" in f)
    late = await connect(owner, conversation.pk)
    frames = await frames_until(late, lambda f: "status-streaming" in f)
    assert "Retrying… (attempt 2 of 3): the API is rate limiting this key." in frames[-1]
    await frames_until(late, _complete)


async def test_it_gives_up_after_the_bounded_retries_with_a_retry_button(
    connect: Any, owner: Any, conversation: Any
) -> None:
    requests = Requests()
    socket = await connect(owner, conversation.pk)
    await _send(socket, "hello [[sim:fail=529,times=3]]")
    frames = await frames_until(socket, _failed)
    assert any("attempt 3 of 3" in f for f in frames)
    assert "Tandem tried 3 times" in frames[-1] and '"type": "retry"' in frames[-1]
    await engine.idle()
    assert requests.since() == (3, 0)
    [failed] = await _replies(conversation)
    assert failed.error.startswith("The API failed (529 overloaded_error).")
    await socket.send_json_to({"type": "retry", "message": failed.pk})
    await frames_until(socket, _complete)
    await engine.idle()
    assert requests.since() == (4, 0)


async def test_it_does_not_wait_for_a_retry_after_longer_than_a_minute(
    connect: Any, owner: Any, conversation: Any
) -> None:
    requests = Requests()
    socket = await connect(owner, conversation.pk)
    await _send(socket, "hello [[sim:fail=429,retry_after=3600]]")
    frames = await frames_until(socket, _failed)
    assert "rate limiting" in frames[-1]
    assert requests.since() == (1, 0)


@pytest.mark.parametrize(
    ("kind", "setting"),
    [("401", "ANTHROPIC_API_KEY"), ("403", "ANTHROPIC_API_KEY"), ("404", "ANTHROPIC_MODEL")],
)
async def test_it_names_the_setting_to_fix_and_does_not_retry(
    connect: Any, owner: Any, conversation: Any, kind: str, setting: str
) -> None:
    requests = Requests()
    socket = await connect(owner, conversation.pk)
    await _send(socket, f"hello [[sim:fail={kind}]]")
    frames = await frames_until(socket, _failed)
    assert setting in frames[-1]
    assert not any("Retrying" in f for f in frames)
    await engine.idle()
    assert requests.since() == (1, 0)
    [reply] = await _replies(conversation)
    assert setting in reply.error and reply.status == Message.Status.ERROR


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("stream_error", "The model stopped with an error mid-reply (overloaded_error)."),
        ("drop", "The connection to the API was lost mid-reply."),
        ("truncate", "The reply was cut off: the stream ended before the model finished."),
    ],
)
async def test_it_keeps_a_reply_that_broke_mid_stream_and_retries_it_validly(
    connect: Any, owner: Any, conversation: Any, kind: str, error: str
) -> None:
    requests = Requests()
    socket = await connect(owner, conversation.pk)
    await _send(socket, f"write a long answer about bells [[sim:fail={kind},after_deltas=20]]")
    frames = await frames_until(socket, _failed)
    assert error in frames[-1] and '"type": "retry"' in frames[-1]
    await engine.idle()
    [broken] = await _replies(conversation)
    assert broken.status == Message.Status.ERROR and broken.error.startswith(error)
    assert len(broken.text) > 20  # the partial output is kept
    assert requests.since() == (1, 0)  # a stream that had started is never re-sent by itself
    await socket.send_json_to({"type": "retry", "message": broken.pk})
    await frames_until(socket, _complete)
    await engine.idle()
    broken, fresh = await _replies(conversation)
    assert broken.superseded and fresh.status == Message.Status.COMPLETE
    assert len(fresh.text) > len(broken.text)
    assert requests.since() == (2, 0)


async def test_it_drops_thinking_cut_before_its_signature_so_the_thread_stays_valid(
    connect: Any, owner: Any, conversation: Any
) -> None:
    conversation.thinking_budget = 2048
    await conversation.asave(update_fields=["thinking_budget"])
    requests = Requests()
    socket = await connect(owner, conversation.pk)
    push_fault(Fault("drop", after_deltas=3))  # mid-thinking: thinking streams first
    await _send(socket, "write a long answer about owls")
    await frames_until(socket, _failed)
    await engine.idle()
    [broken] = await _replies(conversation)
    assert not [b for b in broken.content if b["type"] == "thinking"]
    await _send(socket, "try once more")
    await frames_until(socket, _complete)
    await engine.idle()
    assert requests.since() == (2, 0)
