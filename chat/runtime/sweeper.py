"""A background loop on the server's event loop: timeouts, recovery and lost wakeups."""

from __future__ import annotations

import asyncio
import logging

from channels.db import database_sync_to_async as db
from django.conf import settings

from chat.runtime import engine, keepalive
from chat.services import pairing, recovery

logger = logging.getLogger(__name__)


async def sweep_once(*, first: bool = False) -> list[int]:
    running = set(engine.running_tools())
    touched: set[int] = set()
    if first:
        touched.update(await db(recovery.restart_recovery)(running, engine.INSTANCE_ID))
    else:
        touched.update(await db(recovery.dead_on_this_host)(running, engine.INSTANCE_ID))
    touched.update(await db(pairing.expire_overdue)())
    touched.update(await db(recovery.orphaned_pairs)(running))
    touched.update(await db(recovery.orphaned_replies)())
    await db(recovery.stale_queued)()
    touched.update(await db(recovery.conversations_needing_a_turn)())
    for conversation_id in sorted(touched):
        engine.kick(conversation_id)
    await keepalive.send_due()  # the prompt cache of conversations whose tools still run
    return sorted(touched)


async def run_forever() -> None:
    first = True
    while True:
        try:
            await sweep_once(first=first)
            first = False
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("sweep failed; trying again")
        await asyncio.sleep(settings.TANDEM_SWEEP_INTERVAL_S)
