"""Shared fixtures: personas (owner, outsider, staff), conversations, live sockets."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async as db
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.test import Client

from chat import login_throttle
from chat.billing.pricing import DEFAULT_PRICES
from chat.modelapi import client as model_client
from chat.models import Conversation, ModelPrice
from chat.runtime import engine
from chat.services import pairing
from chat.sockets import ratelimit, socket_quota

User = get_user_model()


@pytest.fixture(autouse=True)
def _fresh_state() -> None:
    ratelimit.reset()
    login_throttle.reset()
    socket_quota.reset()
    model_client.reset()
    model_client.simulator().tokens_per_second = 2000.0
    from chat.simulator import clear_faults

    clear_faults()


@pytest.fixture
def owner(db: None) -> Any:
    return User.objects.create_user("owner", "owner@example.com", "owner-pass-123")


@pytest.fixture
def outsider(db: None) -> Any:
    return User.objects.create_user("outsider", "outsider@example.com", "outsider-pass-123")


@pytest.fixture
def staff(db: None) -> Any:
    return User.objects.create_superuser("staff", "staff@example.com", "staff-pass-123")


@pytest.fixture
def price_table(db: None) -> None:
    """The default prices (seeded by a migration, but flushed by transactional tests)."""
    for model, price in DEFAULT_PRICES.items():
        ModelPrice.objects.update_or_create(
            model=model,
            defaults=price.fields(),
        )


@pytest.fixture
def conversation(owner: Any) -> Conversation:
    return Conversation.objects.create(owner=owner, title="Test")


def session_cookie(user: Any) -> bytes:
    browser = Client()
    browser.force_login(user)
    return f"sessionid={browser.cookies['sessionid'].value}".encode()


@pytest.fixture
async def running_engine() -> AsyncIterator[None]:
    engine.bind(asyncio.get_running_loop())
    yield
    await engine.shutdown()


async def open_or_refused(communicator: WebsocketCommunicator) -> tuple[bool, int | None]:
    """Connect: (True, None) when the socket stays open, (False, code) when it is refused,
    either before the accept (a browser gets an HTTP 403) or right after it with a close code
    (what a browser can read; the consumers refuse that way)."""
    connected, code = await communicator.connect()
    if not connected:
        return False, code
    if await communicator.receive_nothing(timeout=0.02, interval=0.005):
        return True, None
    # Something came: a refusal's close, or live frames of a conversation joined mid-reply,
    # which stay queued in order for the test to read.
    queue = communicator.output_queue
    waiting = [queue.get_nowait() for _ in range(queue.qsize())]
    if waiting[0]["type"] == "websocket.close":
        return False, waiting[0].get("code")
    for output in waiting:
        queue.put_nowait(output)
    return True, None


@pytest.fixture
async def connect(running_engine: None) -> AsyncIterator[Callable[..., Any]]:
    """Open a socket on the real ASGI stack as a user; disconnected after the test."""
    from project.asgi import application

    opened: list[WebsocketCommunicator] = []

    async def _connect(user: Any, conversation_id: int, *, sync: bool = True) -> Any:
        cookie = await db(session_cookie)(user) if user is not None else b""
        communicator = WebsocketCommunicator(
            application,
            f"/ws/conversations/{conversation_id}/",
            headers=[
                (b"cookie", cookie),
                (b"origin", b"http://localhost"),
                (b"host", b"localhost"),
            ],
        )
        connected, code = await open_or_refused(communicator)
        if not connected:
            return code
        opened.append(communicator)
        if sync:
            await communicator.send_json_to({"type": "sync", "seq": 0, "rev": 0})
        return communicator

    yield _connect
    for communicator in opened:
        await communicator.disconnect()


async def frames_until(
    communicator: WebsocketCommunicator, predicate: Callable[[str], bool], within: float = 10
) -> list[str]:
    """Collect frames until one satisfies ``predicate``."""
    seen: list[str] = []
    async with asyncio.timeout(within):
        while True:
            frame = await communicator.receive_from(timeout=within)
            seen.append(frame)
            if predicate(frame):
                return seen


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Browser tests run last: Playwright's sync API owns the thread's event loop meanwhile."""
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Tool runs the pairing service asked for (ids), instead of enqueueing them."""
    calls: list[int] = []
    monkeypatch.setattr(pairing, "enqueue_run", calls.append)
    return calls


async def drain(layer: Any, channel: str) -> list[dict[str, Any]]:
    """What waits on a channel of the layer, until 50 ms pass with nothing more."""
    out = []
    while True:
        try:
            out.append(await asyncio.wait_for(layer.receive(channel), 0.05))
        except TimeoutError:
            return out


class Subscription:
    """From sync code: a new channel in ``groups``; calling it drains what came."""

    def __init__(self, *groups: str) -> None:
        self.layer, self.groups = get_channel_layer(), groups
        self.channel = async_to_sync(self.layer.new_channel)()
        for group in groups:
            async_to_sync(self.layer.group_add)(group, self.channel)

    def __call__(self) -> list[dict[str, Any]]:
        return async_to_sync(drain)(self.layer, self.channel)

    def leave(self) -> None:
        for group in self.groups:
            async_to_sync(self.layer.group_discard)(group, self.channel)
