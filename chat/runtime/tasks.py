"""The background task that runs one tool call and records its result.

Enqueued through Django's Tasks framework, so where tools run is a setting. The embedded
default runs it on the server's own loop; a database-backed backend would run it in a worker.
"""

from __future__ import annotations

import asyncio
import logging

from channels.db import database_sync_to_async as db
from django.conf import settings
from django.tasks import task

from chat.models import ToolPair
from chat.runtime import engine, events
from chat.runtime.progress import ProgressRelay
from chat.services import pairing, policy
from chat.services.errors import ConversationGone
from tools.context import ToolContext
from tools.execution import execute
from tools.registry import registry

logger = logging.getLogger(__name__)


@task
async def run_tool_pair(pair_id: int) -> str:
    try:
        return await _run(pair_id)
    except ConversationGone:
        return "conversation deleted"  # its pair went with it; nothing to record


async def _run(pair_id: int) -> str:
    pair = await db(pairing.mark_running)(pair_id, engine.INSTANCE_ID)
    if pair is None:
        return "not queued"
    # From the database too (MCP tools), so a worker sees what admin saved.
    spec = await db(registry.get)(pair.tool_name)
    if spec is None:
        await db(pairing.record_result)(
            pair_id,
            status=ToolPair.Status.FAILED,
            is_error=True,
            content=f"The tool {pair.tool_name} is no longer available.",
        )
        return "unknown tool"
    group = events.conversation_group(pair.conversation_id)

    async def publish(report: tuple[float | None, str]) -> None:
        fraction, text = report
        message = {"type": "tool.progress", "pair": pair_id, "fraction": fraction, "text": text}
        await events.publish(group, message)

    async def save(report: tuple[float | None, str]) -> None:
        await _save_progress(pair_id, *report)

    relay = ProgressRelay(asyncio.get_running_loop(), publish, save, engine.spawn)
    ctx = ToolContext(pair.tool_use_id, pair.conversation_id, relay.report)
    engine.register_tool(pair.tool_use_id, engine.ToolHandle(cancel=ctx.cancel))
    timeout = pair.seconds_left()
    if timeout is None:  # every queued pair has a deadline; this is the policy's default
        timeout = policy.run_timeout_s(policy.policy_for(pair.tool_name))
    heartbeat = engine.spawn(_heartbeat(pair_id, ctx))
    try:
        outcome = await execute(spec, pair.input, ctx, timeout_s=timeout)
    finally:
        heartbeat.cancel()
        relay.close()
        engine.unregister_tool(pair.tool_use_id)
    if ctx.cancelled and outcome.status != "timed_out":
        return "cancelled"  # whoever cancelled it has already recorded the result
    await db(pairing.record_result)(
        pair_id, status=outcome.status, content=outcome.content, is_error=outcome.is_error
    )
    return outcome.status


async def _heartbeat(pair_id: int, ctx: ToolContext) -> None:
    """Tell other processes this tool is alive, progress or not (see chat.services.recovery),
    three times per expiry. A beat that finds the pair no longer running (cancelled or timed
    out elsewhere, its doorbell lost) stops the tool."""
    while True:
        await asyncio.sleep(settings.TANDEM_TOOL_HEARTBEAT_EXPIRY_S / 3)
        if not await db(pairing.beat)(pair_id):
            ctx.cancel()
            return


async def _save_progress(pair_id: int, fraction: float | None, text: str) -> None:
    still_running = await db(pairing.save_progress)(pair_id, fraction, text)
    if not still_running:
        logger.debug("progress for pair %s arrived after it finished", pair_id)
