"""Which pages may open a socket: only the exact origins the site is served from.

A browser sends the session cookie with a WebSocket opened by any page of the same *site*, and
another port or scheme of the same host is the same site. So, like Django's CSRF origin check
(``CsrfViewMiddleware._origin_verified``), the ``Origin`` header must equal the request's own
origin (scheme, host and port) or be one of ``CSRF_TRUSTED_ORIGINS``; channels'
``AllowedHostsOriginValidator`` compared host names only. The request's own origin is its
scheme (``wss`` -> https, ``ws`` -> http, or the proxy header named by
``SECURE_PROXY_SSL_HEADER``, as ``request.scheme`` does) and its ``Host`` header, which must be
in ``ALLOWED_HOSTS``. A socket without an ``Origin`` header is refused: browsers always send it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

DEBUG_HOSTS = [".localhost", "127.0.0.1", "[::1]"]  # Django's own fallback under DEBUG


@dataclass(frozen=True)
class OriginRules:
    allowed_hosts: tuple[str, ...]
    trusted_origins: tuple[str, ...]
    proxy_ssl_header: tuple[str, str] | None = None

    @classmethod
    def from_settings(cls) -> OriginRules:
        hosts = list(settings.ALLOWED_HOSTS)
        if settings.DEBUG and not hosts:
            hosts = DEBUG_HOSTS
        return cls(
            allowed_hosts=tuple(hosts),
            trusted_origins=tuple(settings.CSRF_TRUSTED_ORIGINS),
            proxy_ssl_header=settings.SECURE_PROXY_SSL_HEADER,
        )


def _header_name(meta_name: str) -> bytes:
    """``HTTP_X_FORWARDED_PROTO`` (a request.META key) -> ``x-forwarded-proto``."""
    return meta_name.removeprefix("HTTP_").replace("_", "-").lower().encode("latin1")


def request_scheme(
    scope_scheme: str, headers: dict[bytes, bytes], proxy_ssl_header: tuple[str, str] | None
) -> str:
    """The scheme the page was served with: ``request.scheme``'s rule for a socket."""
    if proxy_ssl_header is not None:
        name, secure_value = proxy_ssl_header
        value = headers.get(_header_name(name))
        if value is not None:
            first = value.decode("latin1").split(",", 1)[0].strip()
            return "https" if first == secure_value else "http"
    return "https" if scope_scheme in ("wss", "https") else "http"


def _trusted(origin: str, trusted_origins: Iterable[str]) -> bool:
    """``origin`` is a trusted origin, exactly or by a ``https://*.example.com`` pattern."""
    patterns = list(trusted_origins)
    if origin in (p for p in patterns if "*" not in p):
        return True
    try:
        parsed = urlsplit(origin)
    except ValueError:
        return False
    return any(
        parsed.scheme == urlsplit(p).scheme
        and is_same_domain(parsed.netloc, urlsplit(p).netloc.lstrip("*"))
        for p in patterns
        if "*" in p
    )


def origin_allowed(
    origin: str | None, *, scheme: str, host: str | None, rules: OriginRules
) -> bool:
    """Whether a socket with this ``Origin`` header, opened on ``scheme://host``, may connect."""
    if not origin or not host:
        return False
    domain, _port = split_domain_port(host)
    if not domain or not validate_host(domain, list(rules.allowed_hosts)):
        return False
    return origin == f"{scheme}://{host}" or _trusted(origin, rules.trusted_origins)


class SameOriginValidator:
    """ASGI middleware: refuse (HTTP 403 at the handshake) a socket from any other origin."""

    def __init__(self, application: Any, rules: OriginRules | None = None) -> None:
        self.application = application
        self.rules = rules

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] != "websocket":
            raise ValueError("SameOriginValidator only guards WebSocket connections")
        rules = self.rules or OriginRules.from_settings()
        headers: dict[bytes, bytes] = {}
        for name, value in scope.get("headers", []):
            headers.setdefault(bytes(name).lower(), bytes(value))
        scheme = request_scheme(scope.get("scheme", "ws"), headers, rules.proxy_ssl_header)
        origin = headers.get(b"origin")
        host = headers.get(b"host")
        allowed = origin_allowed(
            origin.decode("latin1") if origin is not None else None,
            scheme=scheme,
            host=host.decode("latin1") if host is not None else None,
            rules=rules,
        )
        if allowed:
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)
