"""A socket opens only from the exact origin the site is served from (scheme, host, port).

The issue (15, item 3): channels' AllowedHostsOriginValidator matched host names only, so a
page on another port or scheme of the same host opened a signed-in user's socket.
"""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import override_settings

from chat.models import Conversation
from chat.sockets.origin_check import OriginRules, origin_allowed, request_scheme
from tests.conftest import session_cookie

RULES = OriginRules(
    allowed_hosts=("localhost", "127.0.0.1", "tandem.example"),
    trusted_origins=("https://chat.example.org", "https://*.corp.example"),
)
PROXY = ("HTTP_X_FORWARDED_PROTO", "https")


def allowed(origin: str | None, host: str | None, scheme: str = "http") -> bool:
    return origin_allowed(origin, scheme=scheme, host=host, rules=RULES)


def test_it_accepts_the_exact_origin_with_its_port() -> None:
    assert allowed("http://127.0.0.1:8431", "127.0.0.1:8431")
    assert allowed("http://localhost", "localhost")
    assert allowed("https://tandem.example", "tandem.example", scheme="https")


def test_it_refuses_the_same_host_on_another_port() -> None:
    assert not allowed("http://127.0.0.1:8432", "127.0.0.1:8431")
    assert not allowed("http://127.0.0.1", "127.0.0.1:8431")
    assert not allowed("http://localhost:8000", "localhost")


def test_it_refuses_another_scheme() -> None:
    assert not allowed("https://127.0.0.1:8431", "127.0.0.1:8431")
    assert not allowed("http://tandem.example", "tandem.example", scheme="https")
    assert not allowed("https://127.0.0.1:9999", "127.0.0.1:8431")


def test_it_refuses_localhost_for_127_0_0_1_and_back() -> None:
    assert not allowed("http://localhost:8431", "127.0.0.1:8431")
    assert not allowed("http://127.0.0.1:8431", "localhost:8431")
    assert not allowed("http://localhost", "127.0.0.1")


def test_it_accepts_a_trusted_origin_exactly_or_by_its_subdomain_pattern() -> None:
    assert allowed("https://chat.example.org", "tandem.example")
    assert allowed("https://team.corp.example", "tandem.example")
    assert not allowed("http://chat.example.org", "tandem.example")
    assert not allowed("https://chat.example.org:8443", "tandem.example")
    assert not allowed("https://corp.example.evil", "tandem.example")


def test_it_refuses_a_host_outside_allowed_hosts_even_from_its_own_origin() -> None:
    assert not allowed("http://evil.example", "evil.example")
    assert not allowed("https://chat.example.org", "evil.example")


def test_it_refuses_a_missing_origin_or_host() -> None:
    # Django's CSRF check refuses an unverifiable origin; browsers always send Origin on a
    # WebSocket, so only a non-browser client (which needs the session cookie anyway) lacks it.
    assert not allowed(None, "localhost")
    assert not allowed("", "localhost")
    assert not allowed("null", "localhost")
    assert not allowed("http://localhost", None)


def test_it_takes_the_scheme_from_the_socket_or_the_trusted_proxy_header() -> None:
    assert request_scheme("ws", {}, None) == "http"
    assert request_scheme("wss", {}, None) == "https"
    assert request_scheme("ws", {b"x-forwarded-proto": b"https"}, None) == "http"
    assert request_scheme("ws", {b"x-forwarded-proto": b"https, http"}, PROXY) == "https"
    assert request_scheme("wss", {b"x-forwarded-proto": b"http"}, PROXY) == "http"
    assert request_scheme("wss", {}, PROXY) == "https"


# --- through the real application --------------------------------------------------------


async def connects(
    user: Any, conversation: Conversation, headers: list[tuple[bytes, bytes]]
) -> bool:
    from project.asgi import application

    cookie = await sync_to_async(session_cookie)(user)
    socket = WebsocketCommunicator(
        application,
        f"/ws/conversations/{conversation.pk}/",
        headers=[(b"cookie", cookie), *headers],
    )
    connected, _ = await socket.connect()
    await socket.disconnect()
    return bool(connected)


transactional = pytest.mark.django_db(transaction=True)


@transactional
async def test_the_app_accepts_its_own_origin_and_refuses_another_port(
    running_engine: None, owner: Any, conversation: Conversation
) -> None:
    host = [(b"host", b"127.0.0.1:8431")]
    assert await connects(owner, conversation, [*host, (b"origin", b"http://127.0.0.1:8431")])
    assert not await connects(owner, conversation, [*host, (b"origin", b"http://127.0.0.1:8432")])
    assert not await connects(owner, conversation, [*host, (b"origin", b"https://127.0.0.1:9999")])
    assert not await connects(owner, conversation, [*host, (b"origin", b"http://localhost")])
    assert not await connects(owner, conversation, host)


@transactional
@override_settings(
    ALLOWED_HOSTS=["tandem.example"],
    CSRF_TRUSTED_ORIGINS=["https://chat.example.org"],
    SECURE_PROXY_SSL_HEADER=PROXY,
)
async def test_the_app_behind_a_tls_proxy_accepts_https_and_a_trusted_origin(
    running_engine: None, owner: Any, conversation: Conversation
) -> None:
    host = (b"host", b"tandem.example")
    proxied = [host, (b"x-forwarded-proto", b"https")]
    assert await connects(owner, conversation, [*proxied, (b"origin", b"https://tandem.example")])
    assert await connects(owner, conversation, [*proxied, (b"origin", b"https://chat.example.org")])
    assert not await connects(
        owner, conversation, [*proxied, (b"origin", b"http://tandem.example")]
    )
    assert not await connects(owner, conversation, [host, (b"origin", b"https://tandem.example")])
