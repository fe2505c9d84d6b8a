"""One user's sockets: at most TANDEM_MAX_SOCKETS_PER_USER open, one frame budget for all."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.utils.html import escape

from chat.models import Conversation
from chat.sockets import consumers, inbound, socket_quota
from tests.conftest import session_cookie
from tests.security.sockets import communicator
from tests.security.test_socket_input import answer

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_counts_sockets_per_user_up_to_the_limit() -> None:
    assert [socket_quota.open_socket(7, limit=2) for _ in range(3)] == [True, True, False]
    assert socket_quota.open_socket(8, limit=2)  # another user counts apart
    socket_quota.close_socket(7)
    assert socket_quota.open_socket(7, limit=2)
    assert socket_quota.open_count(7) == 2


def test_it_shares_one_frame_budget_among_a_users_sockets_and_forgets_it_with_the_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(inbound, "FrameBudget", functools.partial(inbound.FrameBudget, 2, 0))
    socket_quota.open_socket(7, limit=5)
    socket_quota.open_socket(7, limit=5)
    assert [socket_quota.take_frame(7, 0.0) for _ in range(3)] == [True, True, False]
    socket_quota.close_socket(7)
    socket_quota.close_socket(7)
    assert not socket_quota.take_frame(7, 0.0)  # no socket open: nothing to spend
    assert socket_quota.open_count(7) == 0


async def test_it_refuses_a_socket_over_the_cap_with_a_reason(
    connect: Any, owner: Any, outsider: Any, conversation: Any, settings: Any
) -> None:
    settings.TANDEM_MAX_SOCKETS_PER_USER = 2
    first = await connect(owner, conversation.pk, sync=False)
    await connect(owner, conversation.pk, sync=False)
    from project.asgi import application

    cookie = await sync_to_async(session_cookie)(owner)
    third = communicator(application, "/ws/conversations/", cookie)
    assert await third.connect() == (True, None)
    closed = await third.receive_output(timeout=5)
    assert closed["code"] == consumers.CLOSE_TOO_MANY_SOCKETS
    assert "2 at most" in closed["reason"]
    theirs = await Conversation.objects.acreate(owner=outsider)
    assert not isinstance(await connect(outsider, theirs.pk, sync=False), int)  # theirs apart
    await first.disconnect()
    assert not isinstance(await connect(owner, conversation.pk, sync=False), int)  # room again


async def test_it_spends_one_frame_budget_across_a_users_sockets(
    connect: Any,
    owner: Any,
    outsider: Any,
    conversation: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(inbound, "FrameBudget", functools.partial(inbound.FrameBudget, 4, 0))
    sockets = [await connect(owner, conversation.pk, sync=False) for _ in range(2)]
    errors = []
    for socket in sockets:
        for _ in range(3):
            await socket.send_json_to({"type": "launch"})
            errors.append(await answer(socket))
    unknown, too_many = escape(inbound.UNKNOWN_ACTION), escape(inbound.TOO_MANY_FRAMES)
    assert errors == [unknown] * 4 + [too_many] * 2
    theirs = await Conversation.objects.acreate(owner=outsider)
    other = await connect(outsider, theirs.pk, sync=False)
    await other.send_json_to({"type": "launch"})
    assert await answer(other) == unknown  # another user's budget is their own
