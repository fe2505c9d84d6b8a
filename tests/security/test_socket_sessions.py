"""A socket whose session ended acts for nobody: closed at once when the server hears of it
(logout, deactivation, password change), else on its next frame (flush, expiry)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from chat.models import Conversation, Message
from chat.sockets import consumers
from tests.conftest import open_or_refused
from tests.security.sockets import communicator

pytestmark = pytest.mark.django_db(transaction=True)


def signed_in(user: Any) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


@pytest.fixture
async def open_as(running_engine: None) -> AsyncIterator[Callable[..., Any]]:
    """``open_as(browser, path)``: a socket carrying that browser's session cookie."""
    from project.asgi import application

    opened: list[WebsocketCommunicator] = []

    async def _open(browser: Client, path: str) -> WebsocketCommunicator:
        cookie = f"sessionid={browser.cookies['sessionid'].value}".encode()
        socket = communicator(application, path, cookie)
        assert await open_or_refused(socket) == (True, None)
        opened.append(socket)
        return socket

    yield _open
    for socket in opened:
        await socket.disconnect()


async def close_code(socket: WebsocketCommunicator) -> int:
    """The code of the close the socket gets without sending anything (pushes skipped)."""
    while (output := await socket.receive_output(timeout=5))["type"] != "websocket.close":
        pass
    return int(output["code"])


async def still_open(socket: WebsocketCommunicator) -> bool:
    await socket.send_json_to({"type": "sync", "seq": 0, "rev": 0})
    while True:
        output = await socket.receive_output(timeout=5)
        if output["type"] == "websocket.close":
            return False
        if 'id="sync-cursor"' in output.get("text", "") or "conversation-list" in output.get(
            "text", ""
        ):
            return True


def paths(conversation: Conversation) -> list[str]:
    return [f"/ws/conversations/{conversation.pk}/", "/ws/conversations/"]


async def test_it_closes_the_sessions_sockets_at_once_on_logout(
    open_as: Any, owner: Any, conversation: Conversation
) -> None:
    browser = await sync_to_async(signed_in)(owner)
    sockets = [await open_as(browser, path) for path in paths(conversation)]
    await sync_to_async(browser.post)("/logout/")
    for socket in sockets:
        assert await close_code(socket) == consumers.CLOSE_UNAUTHENTICATED


async def test_it_leaves_another_session_of_the_same_user_open_on_logout(
    open_as: Any, owner: Any, conversation: Conversation
) -> None:
    leaving = await sync_to_async(signed_in)(owner)
    staying = await sync_to_async(signed_in)(owner)
    gone = await open_as(leaving, f"/ws/conversations/{conversation.pk}/")
    kept = await open_as(staying, f"/ws/conversations/{conversation.pk}/")
    await sync_to_async(leaving.post)("/logout/")
    assert await close_code(gone) == consumers.CLOSE_UNAUTHENTICATED
    assert await still_open(kept)


async def test_it_refuses_a_frame_from_a_flushed_session(
    open_as: Any, owner: Any, conversation: Conversation
) -> None:
    browser = await sync_to_async(signed_in)(owner)
    chat, listing = [await open_as(browser, path) for path in paths(conversation)]
    await Session.objects.filter(pk=browser.session.session_key).adelete()  # no signal at all
    await chat.send_json_to({"type": "send", "text": "from nobody"})
    await listing.send_json_to({"type": "sync", "seq": 0, "rev": 0})
    assert await close_code(chat) == consumers.CLOSE_UNAUTHENTICATED
    assert await close_code(listing) == consumers.CLOSE_UNAUTHENTICATED
    assert not await Message.objects.filter(conversation=conversation).aexists()


async def test_it_refuses_a_frame_from_an_expired_session(
    open_as: Any, owner: Any, conversation: Conversation
) -> None:
    browser = await sync_to_async(signed_in)(owner)
    socket = await open_as(browser, f"/ws/conversations/{conversation.pk}/")
    past = timezone.now() - timedelta(seconds=1)
    await Session.objects.filter(pk=browser.session.session_key).aupdate(expire_date=past)
    await socket.send_json_to({"type": "send", "text": "too late"})
    assert await close_code(socket) == consumers.CLOSE_UNAUTHENTICATED
    assert not await Message.objects.filter(conversation=conversation).aexists()


async def test_it_closes_a_deactivated_users_sockets_at_once(
    open_as: Any, owner: Any, conversation: Conversation
) -> None:
    browser = await sync_to_async(signed_in)(owner)
    sockets = [await open_as(browser, path) for path in paths(conversation)]
    owner.is_active = False
    await owner.asave()
    for socket in sockets:
        assert await close_code(socket) == consumers.CLOSE_UNAUTHENTICATED


async def test_it_refuses_a_frame_of_a_user_deactivated_without_signals(
    open_as: Any, owner: Any, conversation: Conversation
) -> None:
    browser = await sync_to_async(signed_in)(owner)
    socket = await open_as(browser, f"/ws/conversations/{conversation.pk}/")
    await type(owner).objects.filter(pk=owner.pk).aupdate(is_active=False)
    await socket.send_json_to({"type": "send", "text": "still me?"})
    assert await close_code(socket) == consumers.CLOSE_UNAUTHENTICATED
    assert not await Message.objects.filter(conversation=conversation).aexists()


async def test_it_closes_every_socket_of_a_user_whose_password_changed(
    open_as: Any, owner: Any, conversation: Conversation
) -> None:
    browsers = [await sync_to_async(signed_in)(owner) for _ in range(2)]
    sockets = [await open_as(b, f"/ws/conversations/{conversation.pk}/") for b in browsers]
    owner.set_password("a-new-password-456")
    await owner.asave()
    for socket in sockets:
        assert await close_code(socket) == consumers.CLOSE_UNAUTHENTICATED


async def test_it_refuses_a_frame_after_a_password_change_without_signals(
    open_as: Any, owner: Any, conversation: Conversation
) -> None:
    browser = await sync_to_async(signed_in)(owner)
    socket = await open_as(browser, f"/ws/conversations/{conversation.pk}/")
    owner.set_password("a-new-password-456")
    await type(owner).objects.filter(pk=owner.pk).aupdate(password=owner.password)
    await socket.send_json_to({"type": "send", "text": "still me?"})
    assert await close_code(socket) == consumers.CLOSE_UNAUTHENTICATED
    assert not await Message.objects.filter(conversation=conversation).aexists()


async def test_it_keeps_sockets_open_when_the_user_changes_harmlessly(
    open_as: Any, owner: Any, conversation: Conversation
) -> None:
    browser = await sync_to_async(signed_in)(owner)
    sockets = [await open_as(browser, path) for path in paths(conversation)]
    owner.first_name = "Olive"
    await owner.asave()  # rings the account: each socket checks its session, which holds
    for socket in sockets:
        assert await still_open(socket)


@pytest.mark.parametrize("signed_in_user", [False, True])
async def test_it_answers_nothing_but_the_close_to_a_refused_socket(
    running_engine: None, owner: Any, conversation: Conversation, signed_in_user: bool
) -> None:
    from project.asgi import application

    browser = await sync_to_async(signed_in)(owner) if signed_in_user else Client()
    cookie = f"sessionid={browser.cookies['sessionid'].value}" if signed_in_user else ""
    path = f"/ws/conversations/{conversation.pk + (1000 if signed_in_user else 0)}/"
    socket = communicator(application, path, cookie.encode())
    assert await socket.connect() == (True, None)
    await socket.send_json_to({"type": "sync", "seq": 0, "rev": 0})
    closed = await socket.receive_output(timeout=5)
    assert closed["type"] == "websocket.close"
    assert await socket.receive_nothing(timeout=0.2)
    await socket.disconnect()
