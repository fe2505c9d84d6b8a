"""Hypothesis-generated frames against the real socket stack: the socket stays open, every bad
frame gets an error, and the database changes only by the messages that were validly sent.

The stack is project.asgi's socket stack without the engine (tests.security.sockets), so every
database change is the consumer's own. One socket per example, all on one event loop.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import hypothesis
import pytest
from channels.testing import WebsocketCommunicator
from django.utils.html import escape
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from chat.models import Conversation, Message, ToolPair
from chat.sockets import inbound, ratelimit
from tests.conftest import session_cookie
from tests.security.sockets import communicator, foreign_rows, snapshot, socket_stack

pytestmark = pytest.mark.django_db(transaction=True)

MAX_CHARS = 40
KEYS = ("type", "text", "seq", "rev", "message", "pair", "note", "conversation")
AIMED = [
    ("stop", "message"),
    ("retry", "message"),
    ("cancel", "pair"),
    ("approve", "pair"),
    ("deny", "pair"),
]
ACTIONS = ["sync", "send", "stop", "retry", "cancel", "approve", "deny", "explode", ""]

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=50),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def _frames(ids: list[int]) -> st.SearchStrategy[str | bytes]:
    value = st.sampled_from(ids) | st.integers(-5, 2**64) | _json
    shaped = st.fixed_dictionaries(
        {"type": st.sampled_from(ACTIONS)},
        optional={k: value for k in KEYS[1:]},
    )
    sends = st.fixed_dictionaries(
        {"type": st.just("send"), "text": st.text(max_size=MAX_CHARS + 5)}
    )
    syncs = st.fixed_dictionaries(
        {"type": st.just("sync"), "seq": st.integers(0, 99), "rev": st.integers(0, 99)}
    )
    aimed = st.builds(  # well-formed, at the other conversation's rows or at no row at all
        lambda action, id: {"type": action[0], action[1]: id},
        st.sampled_from(AIMED),
        st.sampled_from(ids) | st.integers(1, inbound.MAX_ID),
    )
    return st.one_of(
        _json.map(json.dumps),
        shaped.map(json.dumps),
        sends.map(json.dumps),
        syncs.map(json.dumps),
        aimed.map(json.dumps),
        st.text(max_size=60),
        st.binary(max_size=20),
    )


def _expected(frame: str | bytes, conversation_id: int) -> object:
    text, data = (None, frame) if isinstance(frame, bytes) else (frame, None)
    return inbound.parse(
        inbound.decode(text, data, max_chars=MAX_CHARS),
        conversation_id=conversation_id,
        max_chars=MAX_CHARS,
    )


async def _answer(socket: WebsocketCommunicator, wanted: str) -> str:
    """The consumer's answer to the last frame, skipping doorbell pushes of earlier sends."""
    while True:
        frame = await socket.receive_from(timeout=5)
        if wanted in frame:
            return frame


async def _exchange(
    stack: Any, cookie: bytes, conversation_id: int, frames: list[str | bytes]
) -> int:
    """Send the frames on one socket; returns how many messages it validly sent."""
    socket = communicator(stack, f"/ws/conversations/{conversation_id}/", cookie)
    connected, _ = await socket.connect()
    assert connected
    sent = 0
    for frame in frames:
        key = "bytes" if isinstance(frame, bytes) else "text"
        await socket.send_input({"type": "websocket.receive", key: frame})  # empty frames too
        expected = _expected(frame, conversation_id)
        if isinstance(expected, inbound.Sync):
            await _answer(socket, 'id="sync-cursor"')
            continue
        answer = await _answer(socket, 'id="composer-error"')
        cleared = answer.split(">", 1)[1] == "</div>"
        if isinstance(expected, inbound.Send):
            assert cleared  # accepted: the error line is cleared
            sent += 1
        elif isinstance(expected, inbound.FrameError):
            assert escape(expected.text) in answer
        else:  # stop, retry, cancel, approve, deny: nothing of this conversation qualifies
            assert not cleared
    await socket.send_json_to({"type": "sync", "seq": 0, "rev": 0})
    await _answer(socket, 'id="sync-cursor"')  # still open, still answering
    await socket.disconnect()
    return sent


def test_it_answers_every_random_frame_and_changes_only_what_valid_sends_change(
    owner: Any, outsider: Any, conversation: Conversation, settings: Any
) -> None:
    settings.TANDEM_MAX_MESSAGE_CHARS = MAX_CHARS
    stack = socket_stack()
    cookie = session_cookie(owner)
    foreign = foreign_rows(outsider)
    theirs = snapshot(foreign["conversation"])
    ids = [*foreign.values(), conversation.pk]

    with asyncio.Runner() as runner:

        @hypothesis.settings(
            max_examples=75, deadline=None, suppress_health_check=[HealthCheck.too_slow]
        )
        @given(frames=st.lists(_frames(ids), min_size=1, max_size=6))
        def one_socket(frames: list[str | bytes]) -> None:
            ratelimit.reset()
            before = Message.objects.filter(conversation=conversation).count()
            sent = runner.run(_exchange(stack, cookie, conversation.pk, frames))
            mine = Message.objects.filter(conversation=conversation)
            assert mine.count() == before + sent
            assert not mine.exclude(kind=Message.Kind.PROMPT).exists()
            assert not ToolPair.objects.filter(conversation=conversation).exists()
            assert snapshot(foreign["conversation"]) == theirs

        one_socket()
