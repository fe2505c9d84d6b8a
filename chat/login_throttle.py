"""Login throttling: failed password attempts counted per account and per address in the cache.

Two counters, each living ``TANDEM_LOGIN_WINDOW_S`` from its first failure: one per account
name (case-folded, hashed into the key) and one per client address. Once either holds its
limit, every attempt on that account or from that address is refused *before* the password
is checked (so a flood costs no password hashing) until the counter expires, even with the
right password. Refused attempts are not counted, so the lockout ends with the window. A
success clears its account's failures, never its address's (an attacker's own account must not
wash an address clean). Guesses already in flight when a limit is reached still finish, so
parallel guessing overshoots a limit by at most the number of requests in flight.

The cache is Django's default: shared by every process through Redis when ``REDIS_URL`` is
set, per process otherwise (see ``chat.ratelimit``).
"""

from __future__ import annotations

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


def _count_failure(key: str) -> None:
    cache = caches["default"]
    cache.add(key, 0, timeout=settings.TANDEM_LOGIN_WINDOW_S)
    try:
        cache.incr(key)  # atomic in Redis and in local memory
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=settings.TANDEM_LOGIN_WINDOW_S)


@dataclass(frozen=True)
class Attempt:
    """A login attempt that was let through to the password check."""

    account_key: str
    address_key: str

    def failed(self) -> None:
        _count_failure(self.account_key)
        _count_failure(self.address_key)

    def succeeded(self) -> None:
        """A success clears its account's failures, never its address's."""
        caches["default"].delete(self.account_key)


def begin(username: str, address: str) -> Attempt | None:
    """Let an attempt through, or None when the account or the address is throttled."""
    account_key, address_key = _keys(username, address)
    counts = caches["default"].get_many([account_key, address_key])
    if (
        int(counts.get(account_key, 0)) >= settings.TANDEM_LOGIN_FAILURES_PER_ACCOUNT
        or int(counts.get(address_key, 0)) >= settings.TANDEM_LOGIN_FAILURES_PER_ADDRESS
    ):
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
