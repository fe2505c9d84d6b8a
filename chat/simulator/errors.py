"""The one error type of the simulator's request checks."""

from __future__ import annotations


class InvalidRequest(Exception):
    """A request the real API would refuse with 400 invalid_request_error."""

    status = 400
    error_type = "invalid_request_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
