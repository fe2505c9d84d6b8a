"""Per-user limits on sockets, counted in this server process: how many may be open, and one
inbound frame budget shared by all of them.

Counted per process on purpose (see README, "Security"): the resource a flood exhausts is one
process's event loop and its database thread, so a per-process bound protects exactly that; a
count shared through the cache would cost a round trip per frame and, when a process dies
without closing its sockets, would keep counting them and lock their user out. With several
processes a user may hold the cap in each, and each process still serves its other users.

Only the server's event loop touches this state, so it needs no lock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chat.sockets import inbound


def _new_budget() -> inbound.FrameBudget:
    return inbound.FrameBudget()


@dataclass
class _UserSockets:
    open: int = 0
    budget: inbound.FrameBudget = field(default_factory=_new_budget)


_users: dict[int, _UserSockets] = {}


def open_socket(user_id: int, *, limit: int) -> bool:
    """Count a new socket of this user; False (and not counted) once ``limit`` are open."""
    entry = _users.setdefault(user_id, _UserSockets())
    if entry.open >= limit:
        if entry.open == 0:
            del _users[user_id]
        return False
    entry.open += 1
    return True


def close_socket(user_id: int) -> None:
    """Forget one socket counted by ``open_socket``; the budget goes with the last one."""
    entry = _users.get(user_id)
    if entry is None:
        return
    entry.open -= 1
    if entry.open <= 0:
        del _users[user_id]


def take_frame(user_id: int, now: float) -> bool:
    """Spend one frame of the user's budget (shared by all their sockets in this process)."""
    entry = _users.get(user_id)
    return entry is not None and entry.budget.take(now)


def open_count(user_id: int) -> int:
    entry = _users.get(user_id)
    return entry.open if entry is not None else 0


def reset() -> None:
    """Forget every count (tests)."""
    _users.clear()
