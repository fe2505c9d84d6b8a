from __future__ import annotations

import re
from typing import Any

import pytest
from channels.db import database_sync_to_async as db

from chat.models import Message
from chat.rendering import markdown_to_html
from chat.runtime import engine
from tests.chat.sockets.stream_dom import STREAM_FRAME, StreamDom
from tests.conftest import frames_until

pytestmark = pytest.mark.django_db(transaction=True)


async def _reply(conversation: Any) -> Message:
    return await Message.objects.filter(conversation=conversation, kind="reply").alast()


async def test_it_streams_a_reply_to_every_socket_on_the_conversation(
    connect: Any, owner: Any, conversation: Any
) -> None:
    first = await connect(owner, conversation.pk)
    second = await connect(owner, conversation.pk)
    await first.send_json_to({"type": "send", "text": "Hello there, write a long answer"})
    shown = []
    for socket in (first, second):
        frames = await frames_until(socket, lambda f: "kind-reply status-complete" in f)
        deltas = [f for f in frames if STREAM_FRAME in f]
        assert len(deltas) >= 2  # the reply arrived in pieces
        shown.append(_replay(frames))
    await engine.idle()
    reply = await _reply(conversation)
    assert reply.status == Message.Status.COMPLETE
    assert len(reply.text) > 200
    for dom in shown:  # as Markdown while it streamed, and it ended as it streamed
        assert dom.final == markdown_to_html(reply.text) == dom.streamed_last


def _replay(frames: list[str]) -> StreamDom:
    """The tab's view of the reply, frame by frame: its finished blocks only ever grow
    towards the final render, never doubled or dropped."""
    message_id = int(re.findall(r'id="msg-(\d+)-stream"', "".join(frames))[0])
    dom = StreamDom(message_id)
    finished = []
    for frame in frames:
        dom.apply(frame)
        if dom.final is not None:
            break
        finished.append(dom.blocks)
    assert dom.final is not None
    assert all(dom.final.startswith(blocks) for blocks in finished)
    return dom


async def test_it_refuses_an_outsider_with_4404(
    connect: Any, outsider: Any, conversation: Any
) -> None:
    assert await connect(outsider, conversation.pk) == 4404


async def test_it_refuses_an_anonymous_socket_with_4403(connect: Any, conversation: Any) -> None:
    assert await connect(None, conversation.pk) == 4403


async def test_it_stores_the_user_message_before_anything_can_fail(
    connect: Any, owner: Any, conversation: Any
) -> None:
    socket = await connect(owner, conversation.pk)
    await socket.send_json_to({"type": "send", "text": "keep me [[sim:fail=401]]"})
    await frames_until(socket, lambda f: "kind-reply status-error" in f)
    await engine.idle()
    prompt = await Message.objects.filter(conversation=conversation, kind="prompt").afirst()
    assert prompt.text == "keep me [[sim:fail=401]]"
    reply = await _reply(conversation)
    assert "ANTHROPIC_API_KEY" in reply.error


async def test_it_rejects_an_empty_message_with_a_clear_error(
    connect: Any, owner: Any, conversation: Any
) -> None:
    socket = await connect(owner, conversation.pk, sync=False)
    await socket.send_json_to({"type": "send", "text": "   "})
    frame = await socket.receive_from()
    assert "empty message" in frame
    assert await db(Message.objects.filter(conversation=conversation).count)() == 0


async def test_it_catches_up_a_socket_that_joins_mid_stream(
    connect: Any, owner: Any, conversation: Any
) -> None:
    from chat.modelapi.client import simulator

    simulator().tokens_per_second = 200.0
    first = await connect(owner, conversation.pk)
    await first.send_json_to({"type": "send", "text": "write a long answer please"})
    await frames_until(first, lambda f: STREAM_FRAME in f)
    late = await connect(owner, conversation.pk)
    frames = await frames_until(late, lambda f: "kind-reply status-complete" in f)
    await engine.idle()
    reply = await _reply(conversation)
    # The late socket resynced mid-stream: no block lost or doubled, and it ended as it streamed.
    assert reply.status == Message.Status.COMPLETE
    dom = _replay(frames)
    assert dom.final == markdown_to_html(reply.text) == dom.streamed_last


async def test_it_stops_a_streaming_reply_and_keeps_the_thread_valid(
    connect: Any, owner: Any, conversation: Any
) -> None:
    from chat.modelapi.client import simulator

    simulator().tokens_per_second = 100.0
    socket = await connect(owner, conversation.pk)
    await socket.send_json_to({"type": "send", "text": "write a long answer please"})
    await frames_until(socket, lambda f: STREAM_FRAME in f)
    reply = await _reply(conversation)
    await socket.send_json_to({"type": "stop", "message": reply.pk})
    await frames_until(socket, lambda f: "kind-reply status-interrupted" in f)
    await engine.idle()
    reply = await _reply(conversation)
    assert reply.status == Message.Status.INTERRUPTED and 0 < len(reply.text) < 2000
    simulator().tokens_per_second = 2000.0
    await socket.send_json_to({"type": "send", "text": "and now a short one"})
    await frames_until(socket, lambda f: "kind-reply status-complete" in f)
    assert simulator().stats.snapshot()["rejected_invalid"] == 0


async def test_it_updates_the_title_and_the_list_live(
    connect: Any, owner: Any, conversation: Any
) -> None:
    from channels.testing import WebsocketCommunicator

    from project.asgi import application
    from tests.conftest import session_cookie

    await Message.objects.filter(conversation=conversation).adelete()
    await type(conversation).objects.filter(pk=conversation.pk).aupdate(title="")
    listing = WebsocketCommunicator(
        application,
        "/ws/conversations/",
        headers=[
            (b"cookie", await db(session_cookie)(owner)),
            (b"origin", b"http://localhost"),
            (b"host", b"localhost"),
        ],
    )
    assert (await listing.connect())[0]
    socket = await connect(owner, conversation.pk)
    await socket.send_json_to({"type": "send", "text": "Plan a picnic for Saturday\nwith details"})
    await frames_until(
        socket, lambda f: 'id="conv-title"' in f and "Plan a picnic for Saturday" in f
    )
    await frames_until(listing, lambda f: "Plan a picnic for Saturday" in f)
    await engine.idle()
    await listing.disconnect()


async def test_it_streams_thinking_to_a_tab_that_joins_mid_reply_without_gaps(
    connect: Any, owner: Any, conversation: Any
) -> None:
    from chat.modelapi.client import simulator
    from chat.services.conversations import update_settings

    await db(update_settings)(conversation.pk, system_prompt="", thinking=True)
    simulator().tokens_per_second = 150.0
    first = await connect(owner, conversation.pk)
    await first.send_json_to({"type": "send", "text": "write a long answer about thinking"})
    await frames_until(first, lambda f: "beforeend:#msg-" in f and "-thinking-text" in f)
    late = await connect(owner, conversation.pk)
    frames = await frames_until(late, lambda f: "kind-reply status-complete" in f)
    await engine.idle()
    reply = await _reply(conversation)
    thought = "".join(b["thinking"] for b in reply.content if b["type"] == "thinking")
    assert thought and reply.status == Message.Status.COMPLETE
    assert any("thinking-text" in f for f in frames)


async def test_it_places_nothing_before_the_page_reports_its_cursor(
    connect: Any, owner: Any, conversation: Any
) -> None:
    """A doorbell or a live frame that comes before the page's sync would be placed against
    an empty cursor and append the whole thread again to a page that has it."""
    from chat.services.messages import post_user_message

    socket = await connect(owner, conversation.pk, sync=False)
    await db(post_user_message)(conversation.pk, "reply with exactly: early bird")
    await engine.idle()
    assert await socket.receive_nothing(timeout=0.3)
    await socket.send_json_to({"type": "sync", "seq": 0, "rev": 0})
    frames = await frames_until(socket, lambda f: "sync-cursor" in f)
    assert sum(f.count('<article id="msg-') for f in frames) == 2  # once each, prompt and reply


async def test_a_socket_resyncs_from_the_database_when_the_layer_joined_again(
    connect: Any, owner: Any, conversation: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis came back (chat.runtime.redis_layer): what was stored meanwhile, whose doorbell
    was lost, reaches the open socket."""
    from channels.layers import get_channel_layer

    from chat.runtime import events
    from chat.services import messages

    socket = await connect(owner, conversation.pk)
    while not await socket.receive_nothing(timeout=0.3):
        await socket.receive_from()  # whatever opening the socket sent
    monkeypatch.setattr(messages.events, "ring", lambda *args, **kwargs: None)  # lost
    monkeypatch.setattr(messages.engine, "kick", lambda conversation_id: None)
    await db(messages.post_user_message)(conversation.pk, "stored while Redis was away")
    assert await socket.receive_nothing(timeout=0.3)
    await get_channel_layer().group_send(
        events.conversation_group(conversation.pk), {"type": "layer.rejoined"}
    )
    frames = await frames_until(socket, lambda f: "stored while Redis was away" in f)
    assert sum("stored while Redis was away" in f for f in frames) == 1
