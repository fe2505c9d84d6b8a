from __future__ import annotations


class UserInputError(ValueError):
    """Input from a person that Tandem refuses, with a message fit to show them."""


class NotAllowed(PermissionError):
    """The acting user may not do this."""
