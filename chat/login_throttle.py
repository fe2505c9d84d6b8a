"""Login throttling: failed password attempts counted per account and per address in the cache.

Two counters, each living ``TANDEM_LOGIN_WINDOW_S`` from its first failure: one per account
name (case-folded, hashed into the key) and one per client address. Once either holds its
limit, every attempt on that account or from that address is refused *before* the password
is checked (so a flood costs no password hashing) until the counter expires, even with the
right password. Refused attempts are not counted, so the lockout ends with the window. A
success clears its account's failures, never its address's (an attacker's own account must not
wash an address clean).

An attempt takes its place in its account's count before its password is checked, so parallel
guesses at one account never get past the limit. The address count is only read before and
added to after a failure (a place held there would refuse a busy office's parallel logins), so
parallel guesses from one address overshoot its limit by at most the requests in flight.

The cache is Django's default: shared by every process through Redis when ``REDIS_URL`` is
set, per process otherwise (see ``chat.sockets.ratelimit``).
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest

_generation = 0  # bumped by reset(): tests start from zero without flushing a shared cache


def _keys(username: str, address: str) -> tuple[str, str]:
    account = hashlib.sha256(username.strip().casefold().encode()).hexdigest()[:32]
    return (
        f"login:{_generation}:account:{account}",
        f"login:{_generation}:address:{address or 'unknown'}",
    )


def client_address(request: HttpRequest) -> str:
    """The client's address: the proxy's last ``X-Forwarded-For`` hop when it is trusted."""
    if settings.TANDEM_LOGIN_TRUST_X_FORWARDED_FOR:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if hops:
            return str(hops[-1])  # appended by our proxy; earlier hops are the client's word
    return str(request.META.get("REMOTE_ADDR", ""))


def _count(key: str) -> int:
    """Add one to a counter that lives the window from its first count; the new count."""
    cache = caches["default"]
    cache.add(key, 0, timeout=settings.TANDEM_LOGIN_WINDOW_S)
    try:
        return int(cache.incr(key))  # atomic in Redis and in local memory
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=settings.TANDEM_LOGIN_WINDOW_S)
        return 1


def _uncount(key: str) -> None:
    with contextlib.suppress(ValueError):  # expired meanwhile: nothing to take back
        caches["default"].decr(key)


@dataclass(frozen=True)
class Attempt:
    """A login attempt let through to the password check; it holds a place in its account's
    count, so parallel guesses at one account never get past the limit."""

    account_key: str
    address_key: str

    def failed(self) -> None:
        _count(self.address_key)  # the account's place was taken in begin()

    def succeeded(self) -> None:
        """A success clears its account's failures, never its address's."""
        caches["default"].delete(self.account_key)


def begin(username: str, address: str) -> Attempt | None:
    """Let an attempt through, or None when the account or the address is throttled."""
    account_key, address_key = _keys(username, address)
    address_failures = int(caches["default"].get(address_key, 0))
    if address_failures >= settings.TANDEM_LOGIN_FAILURES_PER_ADDRESS:
        return None
    if _count(account_key) > settings.TANDEM_LOGIN_FAILURES_PER_ACCOUNT:
        _uncount(account_key)  # a refused attempt does not count
        return None
    return Attempt(account_key, address_key)


def refusal_message() -> str:
    minutes = max(1, round(settings.TANDEM_LOGIN_WINDOW_S / 60))
    return (
        "Too many failed login attempts for this account or from this address. "
        f"Try again in at most {minutes} minute{'s' if minutes != 1 else ''}."
    )


def reset() -> None:
    """Forget every count (tests)."""
    global _generation
    _generation += 1
