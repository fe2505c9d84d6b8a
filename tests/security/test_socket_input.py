"""Bad input from browsers: each case gets a clear error on that socket and changes nothing."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.utils.html import escape

from chat.models import Conversation, Message
from chat.services import messages
from chat.sockets import consumers, inbound
from tests.security.sockets import foreign_rows, snapshot

pytestmark = pytest.mark.django_db(transaction=True)


async def answer(socket: WebsocketCommunicator) -> str:
    """The text of the next error frame (skipping doorbell pushes); '' when it clears the line."""
    while True:
        frame = await socket.receive_from(timeout=5)
        if 'id="composer-error"' in frame:
            return frame.split(">", 1)[1].rsplit("</div>", 1)[0]


async def prompts(conversation: Conversation) -> list[str]:
    return [m.text async for m in Message.objects.filter(conversation=conversation, kind="prompt")]


async def still_open(socket: WebsocketCommunicator) -> bool:
    await socket.send_json_to({"type": "sync", "seq": 0, "rev": 0})
    while 'id="sync-cursor"' not in await socket.receive_from(timeout=5):
        pass
    return True


@pytest.mark.parametrize(
    ("frame", "error"),
    [
        ("{nope", inbound.NOT_JSON),
        ("", inbound.NOT_JSON),
        ("[" * 50_000, inbound.NOT_JSON),
        ('["send", "hi"]', inbound.NOT_OBJECT),
        ('{"text": "hi"}', inbound.NO_TYPE),
        ('{"type": "launch"}', inbound.UNKNOWN_ACTION),
        ('{"type": "send"}', 'A "send" frame needs a "text" field.'),
        ('{"type": "cancel"}', 'A "cancel" frame needs a "pair" field.'),
        ('{"type": "send", "text": 5}', '"text" must be a string.'),
        ('{"type": "send", "text": ["a"]}', '"text" must be a string.'),
        ('{"type": "send", "text": null}', '"text" must be a string.'),
        ('{"type": "cancel", "pair": "3"}', '"pair" must be a positive whole number.'),
        ('{"type": "cancel", "pair": 3.5}', '"pair" must be a positive whole number.'),
        ('{"type": "cancel", "pair": true}', '"pair" must be a positive whole number.'),
        ('{"type": "cancel", "pair": -3}', '"pair" must be a positive whole number.'),
        ('{"type": "sync", "seq": "x", "rev": 0}', '"seq" must be a whole number, 0 or more.'),
        ('{"type": "send", "text": "   \\n\\t "}', messages.EMPTY_MESSAGE),
        ('{"type": "send", "text": "a\\u0000b"}', inbound.BAD_CHARACTERS),
        ('{"type": "send", "text": "\\ud800"}', inbound.BAD_CHARACTERS),
    ],
)
async def test_it_answers_a_bad_frame_with_an_error_and_stays_open(
    connect: Any, owner: Any, conversation: Conversation, frame: str, error: str
) -> None:
    socket = await connect(owner, conversation.pk, sync=False)
    await socket.send_input({"type": "websocket.receive", "text": frame})
    assert await answer(socket) == escape(error)
    assert await prompts(conversation) == []
    assert await still_open(socket)


async def test_it_refuses_binary_frames(connect: Any, owner: Any, conversation: Any) -> None:
    socket = await connect(owner, conversation.pk, sync=False)
    await socket.send_to(bytes_data=json.dumps({"type": "send", "text": "hi"}).encode())
    assert await answer(socket) == escape(inbound.NOT_TEXT)
    assert await prompts(conversation) == []


async def test_it_ignores_unknown_fields(connect: Any, owner: Any, conversation: Any) -> None:
    socket = await connect(owner, conversation.pk, sync=False)
    await socket.send_json_to({"type": "send", "text": "hi", "HEADERS": {"HX-Request": "true"}})
    assert await answer(socket) == ""
    assert await prompts(conversation) == ["hi"]


async def test_it_refuses_a_message_over_the_length_setting(
    connect: Any, owner: Any, conversation: Any, settings: Any
) -> None:
    settings.TANDEM_MAX_MESSAGE_CHARS = 50
    socket = await connect(owner, conversation.pk, sync=False)
    await socket.send_json_to({"type": "send", "text": "x" * 51})
    assert await answer(socket) == "That message is too long (51 characters; limit 50 characters)."
    await socket.send_json_to({"type": "send", "text": "y" * 50})
    assert await answer(socket) == ""
    assert await prompts(conversation) == ["y" * 50]


@pytest.mark.parametrize("length", [300_000, 1_000_000])
async def test_it_refuses_an_oversized_frame_with_the_message_limit(
    connect: Any, owner: Any, conversation: Any, length: int
) -> None:
    socket = await connect(owner, conversation.pk, sync=False)
    await socket.send_json_to({"type": "send", "text": "x" * length})
    assert await answer(socket) == "That message is too long (limit 20,000 characters)."
    assert await prompts(conversation) == []


async def test_it_sends_the_error_to_that_socket_only(
    connect: Any, owner: Any, conversation: Any
) -> None:
    bad = await connect(owner, conversation.pk, sync=False)
    other = await connect(owner, conversation.pk, sync=False)
    await bad.send_to(text_data="{nope")
    assert await answer(bad) == escape(inbound.NOT_JSON)
    assert await other.receive_nothing(timeout=0.2)


@pytest.mark.parametrize(
    ("action", "field", "target", "error"),
    [
        ("stop", "message", "streaming", "That reply is not streaming any more."),
        ("retry", "message", "failed", "That reply cannot be retried."),
        ("cancel", "pair", "running", "That tool call is not running any more."),
        ("approve", "pair", "held", "You may not approve that tool call."),
        ("deny", "pair", "held", "You may not deny that tool call."),
    ],
)
async def test_it_refuses_an_action_on_another_conversation_as_if_it_did_not_exist(
    bare_connect: Any,
    owner: Any,
    outsider: Any,
    conversation: Any,
    action: str,
    field: str,
    target: str,
    error: str,
) -> None:
    foreign = await sync_to_async(foreign_rows)(outsider)
    before = await sync_to_async(snapshot)(foreign["conversation"])
    socket = await bare_connect(owner, conversation.pk)
    await socket.send_json_to({"type": action, field: foreign[target]})
    theirs = await answer(socket)
    await socket.send_json_to({"type": action, field: 2**40})  # no such row anywhere
    assert theirs == await answer(socket) == escape(error)
    assert await sync_to_async(snapshot)(foreign["conversation"]) == before


@pytest.mark.parametrize("named", ["foreign", "missing"])
async def test_it_refuses_a_frame_naming_another_conversation_alike_whether_it_exists(
    bare_connect: Any, owner: Any, outsider: Any, conversation: Any, named: str
) -> None:
    foreign = await sync_to_async(foreign_rows)(outsider)
    other = foreign["conversation"] if named == "foreign" else 2**40
    socket = await bare_connect(owner, conversation.pk)
    await socket.send_json_to({"type": "send", "text": "hi", "conversation": other})
    assert await answer(socket) == escape(inbound.OTHER_CONVERSATION)
    assert await prompts(conversation) == []


async def test_it_limits_each_user_to_the_rate_setting(
    connect: Any, owner: Any, outsider: Any, conversation: Any, settings: Any
) -> None:
    settings.TANDEM_RATE_LIMIT_PER_MINUTE = 3
    socket = await connect(owner, conversation.pk, sync=False)
    for n in range(5):
        await socket.send_json_to({"type": "send", "text": f"m{n}"})
    too_fast = escape(consumers.TOO_FAST)
    assert [await answer(socket) for _ in range(5)] == ["", "", "", too_fast, too_fast]
    assert await prompts(conversation) == ["m0", "m1", "m2"]
    theirs = await Conversation.objects.acreate(owner=outsider)
    other = await connect(outsider, theirs.pk, sync=False)
    await other.send_json_to({"type": "send", "text": "mine"})
    assert await answer(other) == ""  # another user's budget is their own


async def test_it_slows_down_a_socket_that_floods_frames(
    connect: Any, owner: Any, conversation: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    budget = functools.partial(inbound.FrameBudget, burst=3, per_second=0.001)
    monkeypatch.setattr(inbound, "FrameBudget", budget)
    socket = await connect(owner, conversation.pk, sync=False)
    for _ in range(5):
        await socket.send_json_to({"type": "launch"})
    errors = [await answer(socket) for _ in range(5)]
    assert errors == [escape(inbound.UNKNOWN_ACTION)] * 3 + [escape(inbound.TOO_MANY_FRAMES)] * 2


async def test_it_closes_a_socket_whose_conversation_was_deleted(
    connect: Any, owner: Any, conversation: Any
) -> None:
    socket = await connect(owner, conversation.pk, sync=False)
    await Conversation.objects.filter(pk=conversation.pk).adelete()
    await socket.send_json_to({"type": "send", "text": "anyone there?"})
    while (output := await socket.receive_output(timeout=5))["type"] != "websocket.close":
        pass
    assert output["code"] == consumers.CLOSE_NOT_FOUND


async def test_it_confirms_a_stored_message_by_the_pages_ref(
    connect: Any, owner: Any, conversation: Any
) -> None:
    socket = await connect(owner, conversation.pk, sync=False)
    await socket.send_json_to({"type": "send", "text": "keep", "ref": "send-7"})
    while 'id="composer-error"' not in (frame := await socket.receive_from(timeout=5)):
        pass
    assert 'data-stored="send-7"' in frame
    await socket.send_json_to({"type": "send", "text": "x", "ref": "<b>"})
    assert await answer(socket) == escape(inbound.BAD_REF)
    assert await prompts(conversation) == ["keep"]
