"""What to tell people when the model API fails: clear messages, naming the setting to fix."""

from __future__ import annotations

from typing import Any

import anthropic

from chat.models import Message


def describe_error(exc: BaseException, *, has_output: bool) -> dict[str, Any]:
    status = Message.Status.INTERRUPTED if has_output else Message.Status.ERROR
    if isinstance(exc, anthropic.AuthenticationError):
        text = "The API key was refused. Check the ANTHROPIC_API_KEY setting."
    elif isinstance(exc, anthropic.PermissionDeniedError):
        text = "This API key may not use this model or feature. Check ANTHROPIC_API_KEY."
    elif isinstance(exc, anthropic.NotFoundError):
        text = "The model was not found. Check the ANTHROPIC_MODEL setting (or the conversation's model)."
    elif isinstance(exc, anthropic.BadRequestError):
        text = f"The API rejected the request: {_message(exc)}"
    elif isinstance(exc, anthropic.RateLimitError):
        text = "The API is rate limiting this key; retries did not help. Try again shortly."
    elif isinstance(exc, anthropic.APIStatusError) and exc.status_code == 200:
        text = f"The model stopped with an error mid-reply ({_error_type(exc)}). Retry to continue."
    elif isinstance(exc, anthropic.APIStatusError):
        text = f"The API failed ({exc.status_code} {_error_type(exc)}). Retry in a moment."
    elif isinstance(exc, anthropic.APITimeoutError):
        text = "The API did not answer in time. Retry in a moment."
    else:
        text = "The connection to the API was lost mid-reply. Retry to continue."
    return {"status": status, "error": text}


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
