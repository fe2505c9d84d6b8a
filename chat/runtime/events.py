"""Publishing to the channel layer: a doorbell plus best-effort live deltas.

The channel layer is at-most-once, so nothing is published here that is not also in the
database (except live deltas, which the final database write supersedes). Doorbells are
rung only after the transaction that made the change commits.
"""

from __future__ import annotations

import logging
import time
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

    def send() -> None:
        # ``at``: when the bell rang (after commit); a tab may share a read only if it began
        # after that (chat.sockets.fanout), so no read from before the change answers it.
        bell = {"type": "conv.changed", "at": time.time()}
        _publish_from_anywhere(conversation_group(conversation_id), bell)
        if owner_id is not None:
            _publish_from_anywhere(
                user_group(owner_id), {"type": "convlist.changed", "conversation": conversation_id}
            )

    transaction.on_commit(send)


def ring_account(user_id: int, *, ended_session: str = "") -> None:
    """After commit: close the user's sockets of ``ended_session`` at once (a logout), or, with
    no session named, ask each of their sockets to check that its session still holds."""
    if ended_session:
        message = {"type": "session.ended", "session": ended_session}
    else:
        message = {"type": "session.check"}
    transaction.on_commit(lambda: _publish_from_anywhere(account_group(user_id), message))
