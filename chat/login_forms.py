"""The login forms (site and admin) with login throttling (``chat.login_throttle``) in front,
and the site's login view, run off the shared database thread."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.exceptions import ValidationError
from django.db import DEFAULT_DB_ALIAS, connections
from django.http import HttpRequest
from django.http.response import HttpResponseBase

from chat import login_throttle


class LoginForm(AuthenticationForm):
    """Refuse a throttled attempt before its password is checked; count wrong credentials."""

    def clean(self) -> dict[str, Any]:
        username = str(self.cleaned_data.get("username") or "")
        address = login_throttle.client_address(self.request) if self.request else ""
        attempt = login_throttle.begin(username, address)
        if attempt is None:
            raise ValidationError(login_throttle.refusal_message(), code="throttled")
        try:
            cleaned = super().clean()
        except ValidationError as exc:
            if getattr(exc, "code", None) == "invalid_login":
                attempt.failed()
            else:
                attempt.succeeded()  # the right password, refused for another reason
            raise
        attempt.succeeded()
        return cleaned


class AdminLoginForm(LoginForm, AdminAuthenticationForm):
    """The admin's own login page, throttled by the same counters."""


def off_the_shared_thread(view: Callable[..., HttpResponseBase]) -> Callable[..., Any]:
    """``view`` as an async view that runs it in a thread of its own.

    Under ASGI every sync view runs on the one thread the process shares with all database work
    (asgiref's thread-sensitive executor). A login spends a few hundred milliseconds of CPU
    hashing the password (PBKDF2), and on that thread it would hold up every turn start and
    stored message meanwhile. Off it, the login reads and writes (session, last login) on a
    connection of its own: fine for PostgreSQL, and a rare second writer that SQLite's busy
    timeout queues. An in-memory SQLite database (the tests') exists per connection, so there the
    view stays on the shared thread.
    """

    @functools.wraps(view)
    async def run(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        connection: Any = connections[DEFAULT_DB_ALIAS]
        shared = connection.vendor == "sqlite" and connection.is_in_memory_db()
        return await sync_to_async(view, thread_sensitive=shared)(request, *args, **kwargs)

    return run


login_view = off_the_shared_thread(LoginView.as_view(authentication_form=LoginForm))
