"""The exceptions of the tool layer.

A tool raises `ToolError` to hand the model a clean error result; anything else it raises is treated
as a bug, logged with its traceback, and reported to the model without internals.
"""

from __future__ import annotations


class ToolError(Exception):
    """A failure the model should read and can act on, e.g. "Unknown time zone 'Paris'"."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ToolInputError(ToolError):
    """The model's input does not match the tool's schema."""


class ToolCancelled(Exception):
    """Raised inside a tool when its caller has asked it to stop."""


class ToolRegistrationError(ValueError):
    """A tool definition is invalid (bad name, duplicate, missing docstring, untyped parameter)."""
