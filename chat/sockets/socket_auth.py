"""Whether an open socket still acts for someone: its session, checked again, and the doorbells.

A socket is authenticated once, at connect. Afterwards its session may end: logout, a flush,
expiry, the user deactivated or their password changed. ``still_signed_in`` asks again with a
fresh copy of the session and Django's own ``get_user`` (the backend lookup, ``is_active`` check
and session-hash comparison that channels' connect-time ``get_user`` mirrors), so nothing here
re-implements hashing. It asks on every inbound frame, and runs where the sockets' other reads
run (``chat.sockets.fanout.read``): in a reader thread on PostgreSQL, so that a message sent
under load does not queue behind the turn runners' writes before it is even stored; on SQLite
on the one shared database thread, where that measured cheaper. (It reads, except that a
session failing the check is deleted, as Django does in a request.)

The receivers below ring every socket of the user through the channel layer (their account
group): a logout names the session that ended, so its sockets close at once; any other change
to the user asks each socket to check its own session, so a second, still valid session of the
same user keeps its sockets.
"""

from __future__ import annotations

import hashlib
from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user, get_user_model, user_logged_out
from django.db.models.signals import post_delete, post_save
from django.http import HttpRequest

from chat.runtime import events
from chat.sockets import fanout


def session_digest(session_key: str | None) -> str:
    """A name for a session that can travel through the channel layer (the key itself is a
    secret: whoever holds it is signed in)."""
    return hashlib.sha256((session_key or "").encode()).hexdigest()[:32] if session_key else ""


async def still_signed_in(scope: dict[str, Any]) -> bool:
    """True while the socket's session still signs in the same active user."""
    user = scope.get("user")
    session = scope.get("session")
    key = getattr(session, "session_key", None)
    if user is None or not user.is_authenticated or not key:
        return False
    signed_in: bool = await fanout.read(_signs_in)(user.pk, key)
    return signed_in


def _signs_in(user_id: int, session_key: str) -> bool:
    request = HttpRequest()
    request.session = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    current = get_user(request)
    return bool(current.is_authenticated and current.is_active and current.pk == user_id)


def _logged_out(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    key = request.session.session_key if hasattr(request, "session") else None
    if user is not None and key:
        events.ring_account(user.pk, ended_session=session_digest(key))


def _user_changed(sender: Any, instance: Any, **kwargs: Any) -> None:
    if kwargs.get("update_fields") == frozenset({"last_login"}):
        return  # every login saves this; it ends no session
    events.ring_account(instance.pk)


def connect_receivers() -> None:
    """Called once from ChatConfig.ready()."""
    user_model = get_user_model()
    user_logged_out.connect(_logged_out, dispatch_uid="tandem-socket-logout")
    post_save.connect(_user_changed, sender=user_model, dispatch_uid="tandem-socket-user-saved")
    post_delete.connect(_user_changed, sender=user_model, dispatch_uid="tandem-socket-user-gone")
