"""What to tell people when the model API fails: clear messages, naming the setting to fix."""

from __future__ import annotations

from typing import Any

import anthropic

from chat.models import Message

TRUNCATED = "The reply was cut off: the stream ended before the model finished. Retry to continue."


def describe_error(exc: BaseException, *, attempts: int = 1) -> dict[str, Any]:
    """The outcome of a reply that failed: status error, and a text a person can act on.

    Whatever was streamed before the failure is kept by the caller; the page shows this text
    with a Retry button.
    """
    tried = f" Tandem tried {attempts} times." if attempts > 1 else ""
    if isinstance(exc, anthropic.AuthenticationError):
        text = "The API key was refused. Check the ANTHROPIC_API_KEY setting."
    elif isinstance(exc, anthropic.PermissionDeniedError):
        text = "This API key may not use this model or feature. Check ANTHROPIC_API_KEY."
    elif isinstance(exc, anthropic.NotFoundError):
        text = (
            "The model was not found. Check the ANTHROPIC_MODEL setting "
            "(or the conversation's model) and ANTHROPIC_BASE_URL."
        )
    elif isinstance(exc, anthropic.BadRequestError):
        text = f"The API rejected the request: {_message(exc)}"
    elif isinstance(exc, anthropic.RateLimitError):
        text = f"The API is rate limiting this key.{tried} Retry in a moment."
    elif isinstance(exc, anthropic.APIStatusError) and exc.status_code == 200:
        text = f"The model stopped with an error mid-reply ({_error_type(exc)}). Retry to continue."
    elif isinstance(exc, anthropic.APIStatusError):
        text = f"The API failed ({exc.status_code} {_error_type(exc)}).{tried} Retry in a moment."
    elif isinstance(exc, anthropic.APITimeoutError):
        text = f"The API did not answer in time.{tried} Retry in a moment."
    elif isinstance(exc, anthropic.APIConnectionError):
        text = f"Tandem could not reach the API.{tried} Retry in a moment."
    else:
        text = "The connection to the API was lost mid-reply. Retry to continue."
    return {"status": Message.Status.ERROR, "error": text}


def retrying_text(exc: BaseException, *, attempt: int, total: int) -> str:
    """Shown on a reply while Tandem waits to ask again."""
    return f"Retrying… (attempt {attempt} of {total}): {_reason(exc)}."


def _reason(exc: BaseException) -> str:
    if isinstance(exc, anthropic.RateLimitError):
        return "the API is rate limiting this key"
    if isinstance(exc, anthropic.APIStatusError):
        if exc.status_code == 529 or _error_type(exc) == "overloaded_error":
            return "the API is overloaded"
        if exc.status_code == 200:
            return f"the API sent an error ({_error_type(exc)})"
        return f"the API failed ({exc.status_code} {_error_type(exc)})"
    if isinstance(exc, anthropic.APITimeoutError):
        return "the API did not answer in time"
    return "the connection to the API failed"


def _body(exc: BaseException) -> dict[str, Any]:
    body = getattr(exc, "body", None)
    return body if isinstance(body, dict) else {}


def _error_type(exc: BaseException) -> str:
    error = _body(exc).get("error")
    return str(error.get("type", "error")) if isinstance(error, dict) else "error"


def _message(exc: BaseException) -> str:
    error = _body(exc).get("error")
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    return str(exc)
