"""Every socket route refuses the anonymous visitor, the outsider and a foreign page's origin."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from chat.models import Conversation
from tests.conftest import open_or_refused, session_cookie
from tests.security.sockets import communicator

pytestmark = pytest.mark.django_db(transaction=True)


async def opened(user: Any, path: str, *, origin: bytes | None = b"http://localhost") -> Any:
    """(True, socket) if the real application accepts the socket, else (False, close code)."""
    from project.asgi import application

    cookie = await sync_to_async(session_cookie)(user) if user is not None else b""
    socket = communicator(application, path, cookie, origin=origin)
    connected, code = await open_or_refused(socket)
    if connected:
        return True, socket
    return False, code


def routes(conversation: Conversation) -> list[str]:
    return [
        f"/ws/conversations/{conversation.pk}/",
        "/ws/conversations/",
        f"/ws/conversations/current/{conversation.pk}/",
    ]


async def test_it_refuses_an_anonymous_socket_on_every_route(
    running_engine: None, conversation: Conversation
) -> None:
    for path in routes(conversation):
        assert await opened(None, path) == (False, 4403), path


async def test_it_refuses_an_outsider_alike_for_anothers_and_a_missing_conversation(
    running_engine: None, outsider: Any, conversation: Conversation
) -> None:
    assert await opened(outsider, f"/ws/conversations/{conversation.pk}/") == (False, 4404)
    assert await opened(outsider, f"/ws/conversations/{conversation.pk + 1000}/") == (False, 4404)


@pytest.mark.parametrize(
    "origin", [b"https://evil.example", b"http://localhost.evil.example", b"null", None]
)
async def test_it_refuses_a_socket_from_a_foreign_origin_on_every_route(
    running_engine: None, owner: Any, conversation: Conversation, origin: bytes | None
) -> None:
    # A malicious page in the same browser would send the session cookie along.
    for path in routes(conversation):
        accepted, _ = await opened(owner, path, origin=origin)
        assert not accepted, path


async def test_it_accepts_the_owner_from_the_sites_own_origin(
    running_engine: None, owner: Any, conversation: Conversation
) -> None:
    for path in routes(conversation):
        accepted, socket = await opened(owner, path)
        assert accepted, path
        await socket.disconnect()


async def test_it_lists_only_the_users_own_conversations_whatever_the_current_id(
    running_engine: None, outsider: Any, conversation: Conversation
) -> None:
    await Conversation.objects.acreate(owner=outsider, title="Mine")
    accepted, socket = await opened(outsider, f"/ws/conversations/current/{conversation.pk}/")
    assert accepted
    await socket.send_to(text_data='{"type": "sync"}')
    frame = await socket.receive_from(timeout=5)
    assert "Mine" in frame and "Test" not in frame
    assert conversation.get_absolute_url() not in frame
    await socket.disconnect()
