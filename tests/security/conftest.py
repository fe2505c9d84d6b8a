"""Fixtures of the security tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from tests.conftest import session_cookie
from tests.security.sockets import communicator, socket_stack


@pytest.fixture
async def bare_connect() -> AsyncIterator[Callable[..., Any]]:
    """Like ``connect``, on the socket stack without the engine (see tests.security.sockets)."""
    opened: list[WebsocketCommunicator] = []

    async def _connect(user: Any, conversation_id: int) -> WebsocketCommunicator:
        cookie = await sync_to_async(session_cookie)(user)
        socket = communicator(socket_stack(), f"/ws/conversations/{conversation_id}/", cookie)
        connected, _ = await socket.connect()
        assert connected
        opened.append(socket)
        return socket

    yield _connect
    for socket in opened:
        await socket.disconnect()
