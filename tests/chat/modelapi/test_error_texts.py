"""chat.modelapi.error_texts: each API failure becomes a text a person can act on."""

from __future__ import annotations

import anthropic
import httpx2
import pytest

from chat.modelapi.error_texts import describe_error, retrying_text
from chat.models import Message

REQUEST = httpx2.Request("POST", "https://api.anthropic.com/v1/messages")


def _status(
    cls: type[anthropic.APIStatusError], status: int, kind: str, message: str = "x"
) -> anthropic.APIStatusError:
    response = httpx2.Response(status, request=REQUEST)
    return cls(message, response=response, body={"error": {"type": kind, "message": message}})


@pytest.mark.parametrize(
    ("error", "names"),
    [
        (_status(anthropic.AuthenticationError, 401, "authentication_error"), "ANTHROPIC_API_KEY"),
        (_status(anthropic.PermissionDeniedError, 403, "permission_error"), "ANTHROPIC_API_KEY"),
        (_status(anthropic.NotFoundError, 404, "not_found_error"), "ANTHROPIC_MODEL"),
    ],
)
def test_it_names_the_setting_to_fix(error: BaseException, names: str) -> None:
    outcome = describe_error(error)
    assert outcome["status"] == Message.Status.ERROR and names in outcome["error"]


def test_it_quotes_the_apis_reason_for_a_bad_request() -> None:
    error = _status(anthropic.BadRequestError, 400, "invalid_request_error", "messages: empty")
    assert describe_error(error)["error"] == "The API rejected the request: messages: empty"


def test_it_says_how_often_it_tried_a_transient_failure() -> None:
    error = _status(anthropic.InternalServerError, 500, "api_error")
    assert describe_error(error, attempts=3)["error"] == (
        "The API failed (500 api_error). Tandem tried 3 times. Retry in a moment."
    )
    assert "tried" not in describe_error(error)["error"]


def test_it_tells_a_mid_reply_error_event_from_a_lost_connection() -> None:
    event = _status(anthropic.APIStatusError, 200, "overloaded_error")
    assert "mid-reply (overloaded_error)" in describe_error(event)["error"]
    assert "connection to the API was lost" in describe_error(RuntimeError("eof"))["error"]


def test_it_says_why_it_is_retrying() -> None:
    overloaded = _status(anthropic.InternalServerError, 529, "overloaded_error")
    assert retrying_text(overloaded, attempt=2, total=4) == (
        "Retrying… (attempt 2 of 4): the API is overloaded."
    )
    timeout = anthropic.APITimeoutError(request=REQUEST)
    assert retrying_text(timeout, attempt=1, total=4).endswith("the API did not answer in time.")
