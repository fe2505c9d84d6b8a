"""The retry policy (chat.modelapi.retry): which failures are asked again, and how long to wait."""

from __future__ import annotations

import email.utils

import anthropic
import httpx2
import pytest

from chat.modelapi import retry

REQUEST = httpx2.Request("POST", "https://api.anthropic.com/v1/messages")


def status_error(
    status: int, headers: dict[str, str] | None = None, kind: str = "api_error"
) -> anthropic.APIStatusError:
    response = httpx2.Response(status, headers=headers or {}, request=REQUEST)
    body = {"type": "error", "error": {"type": kind, "message": "x"}}
    return anthropic.APIStatusError("x", response=response, body=body)


def never_random() -> float:
    return 0.0


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 529])
def test_it_retries_transient_statuses(status: int) -> None:
    assert retry.is_retryable(status_error(status))


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_it_never_retries_client_errors(status: int) -> None:
    assert not retry.is_retryable(status_error(status))
    assert retry.next_delay(status_error(status), 0, 5) is None


def test_it_retries_connection_failures() -> None:
    assert retry.is_retryable(anthropic.APIConnectionError(request=REQUEST))
    assert retry.is_retryable(anthropic.APITimeoutError(request=REQUEST))
    assert retry.is_retryable(httpx2.RemoteProtocolError("peer closed connection"))


def test_it_obeys_the_servers_x_should_retry() -> None:
    assert not retry.is_retryable(status_error(529, {"x-should-retry": "false"}))
    assert retry.is_retryable(status_error(400, {"x-should-retry": "true"}))


def test_it_retries_an_overloaded_error_event_but_not_a_bad_request_event() -> None:
    assert retry.is_retryable(status_error(200, kind="overloaded_error"))
    assert not retry.is_retryable(status_error(200, kind="invalid_request_error"))


def test_it_stops_after_the_configured_retries() -> None:
    error = status_error(500)
    assert retry.next_delay(error, 1, 2) is not None
    assert retry.next_delay(error, 2, 2) is None
    assert retry.next_delay(error, 0, 0) is None


def test_it_backs_off_exponentially_up_to_a_cap() -> None:
    ceilings = [retry.backoff(n, rand=never_random) for n in range(6)]
    assert ceilings == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert retry.backoff(40, rand=never_random) == retry.MAX_DELAY_S


def test_it_jitters_down_to_half_the_backoff() -> None:
    assert retry.backoff(2, rand=lambda: 1.0) == 1.0
    assert retry.backoff(2, rand=lambda: 0.5) == 1.5


def test_it_honours_retry_after_seconds_and_milliseconds() -> None:
    assert retry.next_delay(status_error(429, {"retry-after": "7"}), 0, 2) == 7.0
    assert retry.next_delay(status_error(429, {"retry-after": "0.25"}), 0, 2) == 0.25
    headers = {"retry-after-ms": "1500", "retry-after": "9"}
    assert retry.next_delay(status_error(529, headers), 0, 2) == 1.5


def test_it_honours_retry_after_as_an_http_date() -> None:
    now = 1_800_000_000.0
    headers = {"retry-after": email.utils.formatdate(now + 12, usegmt=True)}
    assert retry.next_delay(status_error(429, headers), 0, 2, now=lambda: now) == 12.0


def test_it_falls_back_to_backoff_on_a_garbled_retry_after() -> None:
    headers = {"retry-after": "soon-ish"}
    delay = retry.next_delay(status_error(429, headers), 1, 2, rand=never_random)
    assert delay == 1.0


def test_it_gives_up_when_the_server_asks_for_more_than_a_minute() -> None:
    assert retry.next_delay(status_error(429, {"retry-after": "61"}), 0, 2) is None
    assert retry.next_delay(status_error(429, {"retry-after": "60"}), 0, 2) == 60.0
