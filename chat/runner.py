"""The turn runner: holds the conversation's lease, flushes finished tool pairs, streams replies.

One runner per conversation at a time (the lease makes that true across processes). It keeps
going while there is something to answer, so a user message that arrives mid-stream and a
tool result that arrives at any moment are both answered by the next turn.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import anthropic
import httpx2
from channels.db import database_sync_to_async as db
from django.conf import settings

from chat import engine
from chat.broadcast import ReplyBroadcaster
from chat.client import get_client
from chat.models import Message
from chat.services import messages, pairing, turns
from chat.upstream import describe_error

logger = logging.getLogger(__name__)

INVALID_JSON = "Unable to parse tool parameter JSON"


async def run_conversation(conversation_id: int) -> None:
    owner = engine.INSTANCE_ID
    while True:
        if not await db(turns.claim_lease)(conversation_id, owner):
            return  # another process holds it; it re-checks before letting go
        renewer = engine.spawn(_keep_lease(conversation_id, owner))
        try:
            while await run_one_turn(conversation_id, owner):
                pass
        finally:
            renewer.cancel()
            await db(turns.release_lease)(conversation_id, owner)
        # Re-check after letting go: work that arrived while we held the lease is not lost.
        if not await db(turns.is_due)(conversation_id):
            return


async def _keep_lease(conversation_id: int, owner: str) -> None:
    while True:
        await asyncio.sleep(settings.TANDEM_LEASE_SECONDS / 3)
        await db(turns.renew_lease)(conversation_id, owner)


async def run_one_turn(conversation_id: int, owner: str) -> bool:
    """Flush what is ready and answer what waits; False when there is nothing to do."""
    await db(pairing.flush_ready)(conversation_id)
    turn = await db(turns.load_turn_input)(conversation_id)
    if turn is None:
        return False
    reply = await db(messages.start_reply)(conversation_id, turn.last_seq)
    task = engine.spawn(stream_reply(conversation_id, reply.pk, turn.request, owner))
    await asyncio.wait([task])
    return True


def _dump(block: Any) -> dict[str, Any]:
    data: dict[str, Any] = block.model_dump(mode="json", exclude_none=True)
    if data.get("type") == "text":
        data.pop("parsed_output", None)
    return data


class _Reply:
    """What one streaming reply has produced so far."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.open_tools: dict[int, tuple[str, str]] = {}
        self.snapshot: Any = None

    def content(self) -> list[dict[str, Any]]:
        """Finished tool calls plus the text and thinking streamed so far, in block order."""
        merged = dict(self.blocks)
        if self.snapshot is not None:
            for index, block in enumerate(self.snapshot.content):
                if block.type in ("text", "thinking", "redacted_thinking") and index not in merged:
                    merged[index] = _dump(block)
        return [merged[i] for i in sorted(merged)]

    def text(self) -> str:
        return "".join(b.get("text", "") for b in self.content() if b.get("type") == "text")


async def stream_reply(
    conversation_id: int, message_id: int, request: dict[str, Any], owner: str
) -> None:
    engine.register_reply(message_id, conversation_id)
    live = engine.live_reply(message_id)
    broadcaster = ReplyBroadcaster(
        conversation_id, message_id, settings.TANDEM_STREAM_COALESCE_MS / 1000
    )
    await broadcaster.start()
    reply = _Reply()
    outcome: dict[str, Any] = {"status": Message.Status.ERROR}
    last_write = time.monotonic()
    try:
        async with get_client().messages.stream(**request) as stream:
            current = -1
            async for event in stream:
                reply.snapshot = stream.current_message_snapshot
                if event.type == "text":
                    if live is not None:
                        live.text += event.text
                    await broadcaster.text(event.text)
                elif event.type == "thinking":
                    broadcaster.thinking(event.thinking)
                elif event.type == "content_block_start":
                    current = event.index
                    if event.content_block.type == "tool_use":
                        block = event.content_block
                        reply.open_tools[event.index] = (block.id, block.name)
                        broadcaster.tool_input(event.index, block.id, block.name, {})
                elif event.type == "input_json" and current in reply.open_tools:
                    tool_id, name = reply.open_tools[current]
                    broadcaster.tool_input(current, tool_id, name, event.snapshot)
                elif event.type == "content_block_stop" and event.content_block.type == "tool_use":
                    block_data = _dump(event.content_block)
                    reply.blocks[event.index] = block_data
                    reply.open_tools.pop(event.index, None)
                    await db(pairing.store_tool_call)(
                        conversation_id, message_id, block_data, event.index
                    )
                if time.monotonic() - last_write >= settings.TANDEM_SNAPSHOT_INTERVAL_S:
                    last_write = time.monotonic()
                    if await _checkpoint(conversation_id, message_id, owner, reply, broadcaster):
                        raise asyncio.CancelledError("stop requested")
            final = await stream.get_final_message()
        reply.snapshot = final
        outcome = _final_outcome(final, reply)
    except asyncio.CancelledError:
        outcome = {"status": Message.Status.INTERRUPTED, "stop_reason": "stopped"}
        if asyncio.current_task() is not None:
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
    except ValueError as exc:
        if INVALID_JSON not in str(exc):
            raise
        outcome = await _invalid_tool_json(conversation_id, message_id, reply, str(exc))
    except (anthropic.APIError, httpx2.HTTPError) as exc:
        outcome = describe_error(exc, has_output=bool(reply.content()))
        logger.warning("model turn failed for conversation %s: %s", conversation_id, exc)
    except Exception:
        logger.exception("model turn crashed for conversation %s", conversation_id)
        outcome = {"status": Message.Status.ERROR, "error": "Tandem hit an internal error."}
    finally:
        await broadcaster.close()
        engine.unregister_reply(message_id)
        content = outcome.pop("content", None) or reply.content()
        await db(messages.finish_reply)(message_id, content=content, **outcome)


async def _checkpoint(
    conversation_id: int,
    message_id: int,
    owner: str,
    reply: _Reply,
    broadcaster: ReplyBroadcaster,
) -> bool:
    """The once-a-second write: snapshot, lease renewal, and whether stop was asked."""
    stop = await db(messages.save_reply_snapshot)(message_id, reply.content())
    await broadcaster.snapshot(reply.text())
    return stop


def _final_outcome(final: Any, reply: _Reply) -> dict[str, Any]:
    content = [_dump(b) for b in final.content]
    usage = final.usage.model_dump(mode="json", exclude_none=True) if final.usage else {}
    outcome: dict[str, Any] = {
        "content": content,
        "usage": usage,
        "api_message_id": final.id or "",
        "stop_reason": final.stop_reason or "",
    }
    if final.stop_reason is None:
        outcome["status"] = Message.Status.ERROR
        outcome["error"] = "The reply was cut off: the stream ended before the model finished."
    else:
        outcome["status"] = Message.Status.COMPLETE
    return outcome


async def _invalid_tool_json(
    conversation_id: int, message_id: int, reply: _Reply, error: str
) -> dict[str, Any]:
    """The model sent tool input that is not JSON: answer that call with an error result."""
    for index, (tool_id, name) in list(reply.open_tools.items()):
        raw = error.split("JSON: ", 1)[-1][:500]
        block = {"type": "tool_use", "id": tool_id, "name": name, "input": {}}
        reply.blocks[index] = block
        await db(pairing.store_tool_call)(
            conversation_id, message_id, block, index, invalid_json=raw
        )
    return {"status": Message.Status.COMPLETE, "stop_reason": "tool_use"}
