"""Password guessing is bounded per account and per address (issue 15, item 7)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, override_settings
from django.urls import reverse

from chat import login_throttle

pytestmark = pytest.mark.django_db

User = get_user_model()
REFUSED = "Too many failed login attempts"


def log_in(username: str, password: str, *, address: str = "10.0.0.1", admin: bool = False) -> Any:
    url = reverse("admin:login") if admin else reverse("login")
    return Client(REMOTE_ADDR=address).post(url, {"username": username, "password": password})


def logged_in(response: Any) -> bool:
    return response.status_code == 302


def fail(username: str, times: int, *, address: str = "10.0.0.1") -> None:
    for _ in range(times):
        response = log_in(username, "wrong-guess", address=address)
        assert not logged_in(response) and REFUSED not in response.content.decode()


@override_settings(TANDEM_LOGIN_FAILURES_PER_ACCOUNT=3, TANDEM_LOGIN_FAILURES_PER_ADDRESS=100)
def test_it_refuses_an_account_after_n_failures_even_with_the_right_password(
    owner: Any, outsider: Any
) -> None:
    fail("owner", 3)
    refused = log_in("owner", "owner-pass-123")
    assert not logged_in(refused)
    assert (
        REFUSED in refused.content.decode()
        and "Try again in at most 15 minutes" in refused.content.decode()
    )
    assert not logged_in(log_in("OWNER ", "owner-pass-123", address="10.9.9.9"))  # any address
    assert logged_in(log_in("outsider", "outsider-pass-123"))  # others are unaffected


@override_settings(TANDEM_LOGIN_FAILURES_PER_ACCOUNT=100, TANDEM_LOGIN_FAILURES_PER_ADDRESS=4)
def test_it_refuses_an_address_after_n_failures_across_accounts(owner: Any) -> None:
    for name in ("ann", "ben", "cat", "dan"):
        fail(name, 1, address="10.0.0.66")
    refused = log_in("owner", "owner-pass-123", address="10.0.0.66")
    assert not logged_in(refused) and REFUSED in refused.content.decode()
    assert logged_in(log_in("owner", "owner-pass-123", address="10.0.0.67"))


@override_settings(TANDEM_LOGIN_FAILURES_PER_ACCOUNT=2, TANDEM_LOGIN_WINDOW_S=1)
def test_it_lets_the_account_in_again_once_the_window_passes(owner: Any) -> None:
    fail("owner", 2)
    assert not logged_in(log_in("owner", "owner-pass-123"))
    time.sleep(1.1)
    assert logged_in(log_in("owner", "owner-pass-123"))


@override_settings(TANDEM_LOGIN_FAILURES_PER_ACCOUNT=3)
def test_a_success_clears_the_accounts_failures(owner: Any) -> None:
    fail("owner", 2)
    assert logged_in(log_in("owner", "owner-pass-123"))
    fail("owner", 2)
    assert logged_in(log_in("owner", "owner-pass-123"))


@override_settings(TANDEM_LOGIN_FAILURES_PER_ACCOUNT=2)
def test_the_admin_login_shares_the_same_limit(staff: Any) -> None:
    for _ in range(2):
        assert not logged_in(log_in("staff", "wrong-guess", admin=True))
    refused = log_in("staff", "staff-pass-123", admin=True)
    assert not logged_in(refused) and REFUSED in refused.content.decode()
    assert not logged_in(log_in("staff", "staff-pass-123"))


@override_settings(
    TANDEM_LOGIN_FAILURES_PER_ACCOUNT=100,
    TANDEM_LOGIN_FAILURES_PER_ADDRESS=2,
    TANDEM_LOGIN_TRUST_X_FORWARDED_FOR=True,
)
def test_behind_a_proxy_it_counts_the_address_the_proxy_saw(owner: Any) -> None:
    def via_proxy(client_ip: str, password: str) -> Any:
        return Client(REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=f"1.2.3.4, {client_ip}").post(
            reverse("login"), {"username": "owner", "password": password}
        )

    via_proxy("203.0.113.5", "wrong")
    via_proxy("203.0.113.5", "wrong")
    assert not logged_in(via_proxy("203.0.113.5", "owner-pass-123"))
    assert logged_in(via_proxy("203.0.113.6", "owner-pass-123"))


@override_settings(TANDEM_LOGIN_FAILURES_PER_ACCOUNT=3)
def test_guesses_in_flight_at_once_never_get_past_an_accounts_limit() -> None:
    in_flight = [login_throttle.begin("owner", f"10.0.1.{i}") for i in range(10)]
    assert sum(attempt is not None for attempt in in_flight) == 3
    for attempt in in_flight:
        if attempt is not None:
            attempt.failed()
    assert login_throttle.begin("owner", "10.0.2.1") is None


def test_it_shows_djangos_message_for_a_wrong_password(owner: Any) -> None:
    page = log_in("owner", "wrong").content.decode()
    assert "Please enter a correct username and password" in page
