"""When a keep-alive request pays: the cost arithmetic of keeping a prompt cache warm.

While a tool runs longer than the cache lifetime (5 minutes, refreshed by every hit and measured
from the start of a request), the next request after the result misses the cache and writes the
whole prefix again. Per prefix token, in units of the input price:

* a miss costs a write (1.25) instead of a read (0.1): 1.15 more;
* a keep-alive (the same prefix, ``max_tokens: 0``, shortly before the entry expires) costs a
  read (0.1) and keeps the entry alive one more lifetime;
* the 1-hour lifetime costs 2 instead of 1.25 on every token ever written: 0.75 more, paid on
  each turn's new tokens, whether a tool runs long or not.

How long a tool runs is unknown, so this is ski rental: pay the small rent (a keep-alive) while
the rent paid stays below the price of buying (one miss): at most floor(1.15 / 0.1) = 11
keep-alives per wait, about 50 minutes. A tool that runs longer costs at most twice the best
choice made with hindsight. Nothing is sent while no tool pends. Pure: no I/O.
"""

from __future__ import annotations

from decimal import Decimal

from chat.billing.pricing import READ, WRITE_5M

TTL_S = 300.0
MARGIN_S = 30.0  # a keep-alive goes out this long before the entry would expire


def max_keepalives(write: Decimal = WRITE_5M, read: Decimal = READ) -> int:
    """Keep-alives worth sending in one wait: while their reads cost less than one miss."""
    return int((write - read) / read)


def keepalive_due(
    *,
    now: float,
    last_request_at: float | None,
    tools_pending: bool,
    sent: int,
    ttl_s: float = TTL_S,
    margin_s: float = MARGIN_S,
) -> bool:
    """A keep-alive is due: a tool pends, the entry is about to expire (not yet expired: then a
    request would only write it again), and the wait has not used up its keep-alives."""
    if not tools_pending or last_request_at is None or sent >= max_keepalives():
        return False
    age = now - last_request_at
    return ttl_s - margin_s <= age < ttl_s
