"""Send the keep-alive requests that are due (called by the sweeper; see chat.services.keepalive).

Non-streaming, ``max_tokens: 0``: the API reads (and so refreshes) the cached prefix and
generates nothing. The reply is not stored; only its usage is recorded.
"""

from __future__ import annotations

import logging

import anthropic
import httpx2
from channels.db import database_sync_to_async as db

from chat.modelapi.client import get_client_without_retries
from chat.services import keepalive

logger = logging.getLogger(__name__)


async def send_due() -> list[int]:
    """Send every keep-alive that is due now; the conversations warmed."""
    warmed = []
    for conversation_id in await db(keepalive.due)():
        request = await db(keepalive.claim)(conversation_id)
        if request is None:
            continue
        try:
            reply = await get_client_without_retries().messages.create(**request)
        except (anthropic.APIError, httpx2.HTTPError) as exc:
            logger.warning("keep-alive failed for conversation %s: %r", conversation_id, exc)
            await db(keepalive.give_up)(conversation_id)
            continue
        usage = reply.usage.model_dump(mode="json", exclude_none=True) if reply.usage else {}
        await db(keepalive.record)(conversation_id, usage)
        warmed.append(conversation_id)
    return warmed
