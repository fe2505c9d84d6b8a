from __future__ import annotations

from chat.models import Conversation


class UserInputError(ValueError):
    """Input from a person that Tandem refuses, with a message fit to show them."""


class NotAllowed(PermissionError):
    """The acting user may not do this."""


class ConversationGone(Conversation.DoesNotExist):
    """The conversation was deleted while work on it (a reply, a tool) was still going on.

    Background work that meets it stops quietly: deleting is what its owner asked for.
    """
