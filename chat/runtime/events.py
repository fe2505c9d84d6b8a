"""Publishing to the channel layer: a doorbell plus best-effort live deltas.

The channel layer is at-most-once, so nothing is published here that is not also in the
database (except live deltas, which the final database write supersedes). Doorbells are
rung only after the transaction that made the change commits; a conversation's bell may
carry the change as well, read from the database after that commit, so that the tabs that
hear it need not read it (a tab that misses it reads at the next).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from chat.runtime import engine

logger = logging.getLogger(__name__)


def conversation_group(conversation_id: int) -> str:
    return f"conv-{conversation_id}"


def user_group(user_id: int) -> str:
    return f"user-{user_id}"


def account_group(user_id: int) -> str:
    """Every open socket of one user, whatever it follows: for news about their sign-in."""
    return f"account-{user_id}"


async def publish(group: str, message: dict[str, Any]) -> None:
    """Send now, from async code; a lost message is logged, never raised."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(group, message)
    except Exception:
        logger.warning("channel layer send to %s failed", group, exc_info=True)


def _publish_from_anywhere(group: str, message: dict[str, Any]) -> None:
    if not engine.call_on_loop(lambda: engine.spawn(publish(group, message))):
        async_to_sync(publish)(group, message)  # no server loop here: send it ourselves


def ring(conversation_id: int, owner_id: int | None = None) -> None:
    """After commit: tell every open tab of this conversation (and its owner's list) to look."""
    transaction.on_commit(lambda: _rang(conversation_id, owner_id))


_bells = threading.local()


@contextlib.contextmanager
def one_bell() -> Iterator[None]:
    """Rings inside the block (one database hop of several commits) wait for its end, and
    each conversation's ring then once: after every commit inside, so one read answers all."""
    if getattr(_bells, "pending", None) is not None:
        yield  # nested: the outer block rings
        return
    pending: dict[int, int | None] = {}
    _bells.pending = pending
    try:
        yield
    finally:
        _bells.pending = None
        for conversation_id, owner_id in pending.items():
            try:
                _send_bell(conversation_id, owner_id)
            except Exception:  # the others still ring; the block's own error is not masked
                logger.warning("doorbell of conversation %s failed", conversation_id, exc_info=True)


def _rang(conversation_id: int, owner_id: int | None) -> None:
    pending: dict[int, int | None] | None = getattr(_bells, "pending", None)
    if pending is None:
        _send_bell(conversation_id, owner_id)
    elif owner_id is not None or conversation_id not in pending:
        pending[conversation_id] = owner_id


# What a conversation's bell carries besides its time, where the process can say: the change
# itself, so that the tabs need not read it (``chat.sockets.fanout.describe``, wired at
# start-up by chat.apps: this layer never imports the sockets).
_describe: Callable[[int], dict[str, Any] | None] | None = None


def describe_changes_with(describe: Callable[[int], dict[str, Any] | None] | None) -> None:
    global _describe
    _describe = describe


def _send_bell(conversation_id: int, owner_id: int | None) -> None:
    # ``at``: when the bell rang (after commit); a tab may share a read only if it began
    # after that (chat.sockets.fanout), so no read from before the change answers it.
    bell: dict[str, Any] = {"type": "conv.changed", "at": time.time()}
    if _describe is not None:
        try:
            bell.update(_describe(conversation_id) or {})
        except Exception:  # the bell still rings, and the tabs read
            logger.warning("describing conversation %s failed", conversation_id, exc_info=True)
    _publish_from_anywhere(conversation_group(conversation_id), bell)
    if owner_id is not None:
        _publish_from_anywhere(
            user_group(owner_id), {"type": "convlist.changed", "conversation": conversation_id}
        )


def ring_account(user_id: int, *, ended_session: str = "") -> None:
    """After commit: close the user's sockets of ``ended_session`` at once (a logout), or, with
    no session named, ask each of their sockets to check that its session still holds."""
    if ended_session:
        message = {"type": "session.ended", "session": ended_session}
    else:
        message = {"type": "session.check"}
    transaction.on_commit(lambda: _publish_from_anywhere(account_group(user_id), message))
