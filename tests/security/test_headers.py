"""Headers and cookies: CSP with a per-response nonce on every script, cookies out of reach of
script and of other sites, no framing, no sniffing."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.security.inert import elements

pytestmark = pytest.mark.django_db


def policy(response: Any) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {d.split()[0]: d.split()[1:] for d in header.split(";") if d.strip()}


def scripts(response: Any) -> list[dict[str, str]]:
    return [dict(attrs) for tag, attrs in elements(response.content.decode()) if tag == "script"]


def assert_strict(csp: dict[str, list[str]]) -> None:
    assert csp["default-src"] == ["'self'"]
    assert csp["object-src"] == ["'none'"] and csp["frame-ancestors"] == ["'none'"]
    assert not any("unsafe" in value for values in csp.values() for value in values)


def test_it_sends_a_strict_csp_whose_nonce_every_script_carries(
    owner: Any, conversation: Any
) -> None:
    browser = Client()
    browser.force_login(owner)
    responses = [
        browser.get(reverse("chat:index")),
        browser.get(conversation.get_absolute_url()),
        Client().get(reverse("login")),
    ]
    for response in responses:
        assert response.status_code == 200
        csp = policy(response)
        assert_strict(csp)
        (nonce,) = [v for v in csp["script-src"] if v.startswith("'nonce-")]
        assert scripts(response)
        for script in scripts(response):
            assert f"'nonce-{script['nonce']}'" == nonce and script["src"].startswith("/static/")


def test_it_keeps_the_csp_on_admin_pages_whose_scripts_load_from_static(staff: Any) -> None:
    browser = Client()
    browser.force_login(staff)
    for url in (reverse("admin:index"), reverse("admin:chat_toolpair_changelist")):
        response = browser.get(url)
        assert_strict(policy(response))
        for script in scripts(response):  # same-origin files, or JSON data that never runs
            src = script.get("src", "")
            same_origin = src.startswith("/") and not src.startswith("//")
            assert same_origin or script.get("type") == "application/json", script


def test_it_gives_every_response_a_fresh_nonce(owner: Any) -> None:
    browser = Client()
    browser.force_login(owner)
    first, second = (policy(browser.get(reverse("chat:index")))["script-src"] for _ in range(2))
    assert first != second


def test_it_keeps_the_session_cookie_from_script_and_other_sites(owner: Any) -> None:
    response = Client().post(reverse("login"), {"username": "owner", "password": "owner-pass-123"})
    assert response.status_code == 302
    cookie = response.cookies["sessionid"]
    assert cookie["httponly"] is True
    assert cookie["samesite"] == "Lax"
    assert cookie["secure"] is True  # DEBUG is off in tests, as in production
    assert re.search(r"sessionid=[^;]+;.*HttpOnly.*SameSite=Lax", cookie.output(), re.I)


def test_it_forbids_framing_and_sniffing(owner: Any, conversation: Any) -> None:
    browser = Client()
    browser.force_login(owner)
    response = browser.get(conversation.get_absolute_url())
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"
