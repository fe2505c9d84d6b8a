"""The login forms (site and admin) with login throttling (``chat.login_throttle``) in front."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

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
