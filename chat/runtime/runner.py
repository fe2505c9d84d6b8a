"""The turn runner: holds the conversation's lease, flushes finished tool pairs, streams replies.

One runner per conversation at a time (the lease makes that true across processes). It keeps
going while there is something to answer, so a user message that arrives mid-stream and a
tool result that arrives at any moment are both answered by the next turn.

A failure before the first stream event is retried here (policy in
``chat.modelapi.retry``), with the wait shown on the reply; any later failure keeps what
was streamed and ends the reply in error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import anthropic
import httpx2
from channels.db import database_sync_to_async as db
from django.conf import settings

from chat.modelapi import retry
from chat.modelapi.client import get_client_without_retries
from chat.modelapi.error_texts import TRUNCATED, describe_error, retrying_text
from chat.models import Message
from chat.runtime import engine
from chat.runtime.broadcast import ReplyBroadcaster
from chat.services import messages, pairing, retry_notes, turns
from chat.services.errors import ConversationGone

logger = logging.getLogger(__name__)

INVALID_JSON = "Unable to parse tool parameter JSON"


async def run_conversation(conversation_id: int) -> None:
    await _run_until_gone(conversation_id, None)


async def run_begun(conversation_id: int, turn: turns.Turn | None) -> None:
    """The runner of a turn begun already: the sender's hop stored the message, claimed the
    lease and began the turn (``turns.post_and_begin``); from then on as ``run_conversation``."""
    await _run_until_gone(conversation_id, (turn,))


async def _run_until_gone(conversation_id: int, begun: tuple[turns.Turn | None] | None) -> None:
    try:
        await _run_while_due(conversation_id, begun)
    except ConversationGone:
        logger.info("conversation %s was deleted; its turn runner stops", conversation_id)


async def _run_while_due(conversation_id: int, begun: tuple[turns.Turn | None] | None) -> None:
    """``begun``: (the turn,) when the lease is claimed and the turn begun already."""
    owner = engine.INSTANCE_ID
    while True:
        # One hop claims the lease and begins the first turn (a hop less before the first token).
        if begun is not None:
            claimed, (first,), begun = True, begun, None
        else:
            claimed, first = await db(turns.claim_and_begin)(conversation_id, owner)
        if not claimed:
            return  # another process holds it; it re-checks before letting go
        renewer = engine.spawn(_keep_lease(conversation_id, owner))
        try:
            again = await _run_turns(conversation_id, owner, first)
        except BaseException:
            renewer.cancel()
            await db(turns.release_lease)(conversation_id, owner)
            raise
        renewer.cancel()
        if not again:
            return


async def _run_turns(conversation_id: int, owner: str, turn: turns.Turn | None) -> bool:
    """Turns while something is due, from ``turn`` (begun already); the lease is let go on
    return. True: work arrived while it was held, claim it again."""
    while turn is not None:
        released = await _answer(conversation_id, turn, owner)
        # After a turn, usually nothing waits: one statement lets go unless something does
        # (run in the reply's finishing hop, unless the turn ended otherwise).
        if released is None:
            released = await db(turns.release_if_idle)(conversation_id, owner)
        if released:
            return False
        turn = await db(turns.begin_turn)(conversation_id)
    # Re-check after letting go: work that arrived while we held the lease is not lost.
    return bool(await db(turns.release_and_check)(conversation_id, owner))


async def _keep_lease(conversation_id: int, owner: str) -> None:
    while True:
        await asyncio.sleep(settings.TANDEM_LEASE_SECONDS / 3)
        await db(turns.renew_lease)(conversation_id, owner)


async def run_one_turn(conversation_id: int, owner: str) -> bool:
    """Flush what is ready and answer what waits; False when there is nothing to do."""
    turn = await db(turns.begin_turn)(conversation_id)  # one hop: flush, input, budget, start
    if turn is None:
        return False
    await _answer(conversation_id, turn, owner)
    return True


async def _answer(conversation_id: int, turn: turns.Turn, owner: str) -> bool | None:
    """Stream the reply a begun turn opened (none: a notice answered, the owner is over
    budget; the user's message stays stored). Whether its end let the lease go; None when
    that was not asked (no reply, or it ended without its finishing hop)."""
    if turn.reply_id is None:
        return None
    task = engine.spawn(stream_reply(conversation_id, turn.reply_id, turn.input.request, owner))
    await asyncio.wait([task])
    if task.cancelled() or task.exception() is not None:
        return None  # (logged by the engine)
    released: bool | None = task.result()
    return released


def _dump(block: Any) -> dict[str, Any]:
    data: dict[str, Any] = block.model_dump(mode="json", exclude_none=True)
    if data.get("type") == "text":
        data.pop("parsed_output", None)
    return data


class _Reply:
    """One streaming reply: where it goes, and what it has produced so far."""

    def __init__(
        self, conversation_id: int, message_id: int, broadcaster: ReplyBroadcaster
    ) -> None:
        self.conversation_id = conversation_id
        self.message_id = message_id
        self.broadcaster = broadcaster
        self.attempts = 0
        self.started = False  # an event arrived: from now on a failure is not retried
        self.blocks: dict[int, dict[str, Any]] = {}
        self.open_tools: dict[int, tuple[str, str]] = {}
        self.snapshot: Any = None

    def content(self, *, final: bool = True) -> list[dict[str, Any]]:
        """Finished tool calls plus the text and thinking streamed so far, in block order.

        In the final content a thinking block counts only once it is signed: one cut off
        mid-thought would make every later request invalid. Snapshots keep it for display
        (``chat.services.recovery`` drops it if the process dies before the end).
        """
        merged = dict(self.blocks)
        if self.snapshot is not None:
            for index, block in enumerate(self.snapshot.content):
                if index in merged or block.type not in ("text", "thinking", "redacted_thinking"):
                    continue
                if final and block.type == "thinking" and not block.signature:
                    continue
                merged[index] = _dump(block)
        return [merged[i] for i in sorted(merged)]

    def text(self) -> str:
        blocks = self.content(final=False)
        return "".join(b.get("text", "") for b in blocks if b.get("type") == "text")

    def thinking(self) -> str:
        blocks = self.content(final=False)
        return "".join(b.get("thinking", "") for b in blocks if b.get("type") == "thinking")


async def stream_reply(
    conversation_id: int, message_id: int, request: dict[str, Any], owner: str
) -> bool | None:
    """Stream one reply and store its end; then let the lease go if nothing is due, in the same
    hop: whether it did (None if the reply's conversation is gone)."""
    engine.register_reply(message_id, conversation_id)
    broadcaster = ReplyBroadcaster(
        conversation_id, message_id, settings.TANDEM_STREAM_COALESCE_MS / 1000
    )
    await broadcaster.start()
    reply = _Reply(conversation_id, message_id, broadcaster)
    outcome: dict[str, Any] = {"status": Message.Status.ERROR}
    gone = False
    released: bool | None = None
    try:
        final = await _stream_with_retries(reply, request)
        reply.snapshot = final
        outcome = _final_outcome(final, reply)
    except asyncio.CancelledError:
        outcome = {"status": Message.Status.INTERRUPTED, "stop_reason": "stopped"}
        if asyncio.current_task() is not None:
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
    except ConversationGone:
        gone = True  # deleted mid-stream: nothing left to finish
    except ValueError as exc:
        if INVALID_JSON not in str(exc):
            raise
        try:
            outcome = await _invalid_tool_json(conversation_id, message_id, reply, str(exc))
        except ConversationGone:
            gone = True
    except (anthropic.APIError, httpx2.HTTPError) as exc:
        outcome = describe_error(exc, attempts=reply.attempts)
        logger.warning("model turn failed for conversation %s: %r", conversation_id, exc)
    except Exception:
        logger.exception("model turn crashed for conversation %s", conversation_id)
        outcome = {"status": Message.Status.ERROR, "error": "Tandem hit an internal error."}
    finally:
        await broadcaster.close()
        engine.unregister_reply(message_id)
        if not gone:
            content = outcome.pop("content", None) or reply.content()
            with contextlib.suppress(ConversationGone):  # deleted while it stopped
                released = await db(turns.finish_and_release)(
                    message_id, conversation_id, owner, content=content, **outcome
                )
    return released


async def _stream_with_retries(reply: _Reply, request: dict[str, Any]) -> Any:
    """Stream the reply; failures before the first event are retried, visibly and bounded."""
    client = get_client_without_retries()  # the SDK would retry invisibly
    max_retries = max(0, settings.ANTHROPIC_MAX_RETRIES)
    while True:
        reply.attempts += 1
        try:
            return await _stream_once(client, reply, request)
        except (anthropic.APIError, httpx2.TransportError) as exc:
            retries_done = reply.attempts - 1
            delay = None if reply.started else retry.next_delay(exc, retries_done, max_retries)
            if delay is None:
                raise
            logger.warning(
                "model API failed for conversation %s (%r); retry %s of %s in %.1f s",
                reply.conversation_id,
                exc,
                retries_done + 1,
                max_retries,
                delay,
            )
            text = retrying_text(exc, attempt=reply.attempts + 1, total=max_retries + 1)
            await db(retry_notes.set_note)(reply.message_id, text)
            await asyncio.sleep(delay)


async def _stream_once(
    client: anthropic.AsyncAnthropic, reply: _Reply, request: dict[str, Any]
) -> Any:
    conversation_id, message_id = reply.conversation_id, reply.message_id
    broadcaster = reply.broadcaster
    live = engine.live_reply(message_id)
    last_write, interval = time.monotonic(), settings.TANDEM_SNAPSHOT_INTERVAL_S
    async with client.messages.stream(**request) as stream:
        current = -1
        async for event in stream:
            if not reply.started:
                reply.started = True
                if reply.attempts > 1:
                    await db(retry_notes.set_note)(message_id, "")
            reply.snapshot = stream.current_message_snapshot
            if event.type == "text":
                if live is not None:
                    live.text += event.text
                await broadcaster.text(event.text)
            elif event.type == "thinking":
                if live is not None:
                    live.thinking += event.thinking
                await broadcaster.thinking(event.thinking)
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
                reply.broadcaster.tool_done(event.index)
                await db(pairing.store_tool_call)(
                    conversation_id, message_id, block_data, event.index
                )
            if time.monotonic() - last_write >= interval:
                last_write = time.monotonic()
                if await _checkpoint(reply):
                    raise asyncio.CancelledError("stop requested")
        return await stream.get_final_message()


async def _checkpoint(reply: _Reply) -> bool:
    """The once-a-second write: snapshot, and whether stop was asked."""
    stop = await db(messages.save_reply_snapshot)(reply.message_id, reply.content(final=False))
    await reply.broadcaster.snapshot(reply.text(), reply.thinking())
    return bool(stop)


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
        # No message_stop: keep what was finished (an unfinished tool call never ran).
        outcome["content"] = reply.content()
        outcome["status"] = Message.Status.ERROR
        outcome["error"] = TRUNCATED
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
