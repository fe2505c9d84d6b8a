"""The conversation and sidebar sockets: access check, then dispatch. State changes live in
chat.services; session checks in socket_auth, per-user limits in socket_quota (both here)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async as db
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.layers import get_channel_layer
from django.conf import settings

from chat.models import Conversation
from chat.queries import access
from chat.runtime import events
from chat.services import approvals, messages, pairing, turns
from chat.services.errors import NotAllowed, UserInputError
from chat.sockets import (
    dispatch_loop,
    fanout,
    inbound,
    outbound,
    ratelimit,
    socket_auth,
    socket_quota,
)
from chat.sockets.tab_state import TabState

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_TOO_MANY_SOCKETS = 4429
TOO_FAST = "You are sending messages too fast; wait a moment."


class GroupSocket(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    """A signed-in socket that follows one channel-layer group until it closes.

    Refusals are sent after accepting, so browsers see the close code (a close before the
    accept becomes an HTTP 403, which a browser reports as 1006 and retries for ever).
    Every inbound frame first spends the user's frame budget, then re-checks the session: a
    socket whose session ended acts for nobody. The user's account group rings it when a
    session of theirs ends or their account changes.
    """

    group = ""
    counted_user: int | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """``AsyncConsumer.__call__`` with its loop over the two inboxes replaced by a cheaper
        one (chat.sockets.dispatch_loop): the same handlers, one at a time."""
        self.scope = scope
        self.channel_layer = get_channel_layer(self.channel_layer_alias)
        inboxes = [receive]
        if self.channel_layer is not None:
            self.channel_name = await self.channel_layer.new_channel()
            self.channel_receive = functools.partial(self.channel_layer.receive, self.channel_name)
            inboxes.append(self.channel_receive)
        self.base_send = send
        with contextlib.suppress(StopConsumer):
            await dispatch_loop.run(inboxes, self.dispatch)

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Each message goes straight to its handler, without Channels' hop through the one
        shared database thread first (``close_old_connections``): a delta must not wait
        behind the database, nor a sent message behind it twice. Every handler here reaches
        the database only through ``database_sync_to_async``, which closes old connections
        itself, in the thread that holds them."""
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def signed_in_user(self) -> Any:
        """The user, or None after refusing the socket with 4403."""
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.refuse(CLOSE_UNAUTHENTICATED)
            return None
        return user

    async def refuse(self, code: int, reason: str = "") -> None:
        await self.accept()
        await self.close(code=code, reason=reason or None)

    async def join(self, group: str) -> None:
        user_id = self.scope["user"].pk
        limit = settings.TANDEM_MAX_SOCKETS_PER_USER
        if not socket_quota.open_socket(user_id, limit=limit):
            reason = f"Too many open connections ({limit} at most): close other Tandem tabs."
            await self.refuse(CLOSE_TOO_MANY_SOCKETS, reason)
            return
        self.counted_user = user_id
        self.group = group
        await self.channel_layer.group_add(group, self.channel_name)
        await self.channel_layer.group_add(events.account_group(user_id), self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.counted_user is not None:
            socket_quota.close_socket(self.counted_user)
            await self.channel_layer.group_discard(
                events.account_group(self.counted_user), self.channel_name
            )
            self.counted_user = None
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def admit_frame(self) -> bool:
        """Whether to act on an inbound frame: within the user's budget (else an error frame)
        and from a session that still holds (else the socket is closed with 4403)."""
        if self.counted_user is None:
            return False  # a refused socket, already closing: nothing to answer
        if not socket_quota.take_frame(self.counted_user, time.monotonic()):
            await self.send_error(inbound.TOO_MANY_FRAMES)
            return False
        if not await socket_auth.still_signed_in(self.scope):
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return False
        return True

    async def send_error(self, text: str) -> None:
        await self.send(text_data=outbound.error(text))

    # --- from the channel layer (the user's account group) ---------------------------------

    async def session_ended(self, event: dict[str, Any]) -> None:
        if event["session"] == socket_auth.session_digest(self.scope["session"].session_key):
            await self.close(code=CLOSE_UNAUTHENTICATED)

    async def session_check(self, event: dict[str, Any]) -> None:
        if not await socket_auth.still_signed_in(self.scope):
            await self.close(code=CLOSE_UNAUTHENTICATED)

    async def layer_rejoined(self, event: dict[str, Any]) -> None:
        """Redis came back (chat.runtime.redis_layer): send what was missed meanwhile."""
        await self.resync()

    async def resync(self) -> None:
        raise NotImplementedError


class ConversationConsumer(GroupSocket):
    conversation_id: int
    tab: TabState

    async def connect(self) -> None:
        user = await self.signed_in_user()
        if user is None:
            return
        self.conversation_id = int(self.scope["url_route"]["kwargs"]["conversation_id"])
        if await db(access.owned_conversation)(user, self.conversation_id) is None:
            await self.refuse(CLOSE_NOT_FOUND)
            return
        self.tab = TabState()
        await self.join(events.conversation_group(self.conversation_id))

    # --- from the browser ----------------------------------------------------------------

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Each frame is parsed by chat.sockets.inbound; a refused one gets an error frame."""
        if not await self.admit_frame():
            return
        limit = settings.TANDEM_MAX_MESSAGE_CHARS
        action = inbound.parse(
            inbound.decode(text_data, bytes_data, max_chars=limit),
            conversation_id=self.conversation_id,
            max_chars=limit,
        )
        if isinstance(action, inbound.FrameError):
            await self.send_error(action.text)
            return
        handler = self.actions.get(action.type)
        if handler is None:
            await self.send_error(inbound.UNKNOWN_ACTION)
            return
        try:
            await handler(self, action)
        except UserInputError as exc:
            await self.send_error(str(exc))
        except Conversation.DoesNotExist:  # the conversation was deleted while this socket was open
            await self.close(code=CLOSE_NOT_FOUND)

    async def do_sync(self, action: inbound.Sync) -> None:
        self.tab.seq = action.seq
        self.tab.rev = action.rev
        self.tab.synced = True
        self.tab.streams.clear()
        self.tab.blocks.clear()
        await self.push_changes(resync=True)

    async def do_send(self, action: inbound.Send) -> None:
        await self.check_rate()
        await db(turns.post_and_begin)(self.conversation_id, action.text)
        await self.send(text_data=outbound.stored(action.ref))

    async def do_stop(self, action: inbound.Stop) -> None:
        if not await db(messages.request_stop)(self.conversation_id, action.message):
            raise UserInputError("That reply is not streaming any more.")

    async def do_retry(self, action: inbound.Retry) -> None:
        await self.check_rate()  # a retry asks the model again, like a message
        if not await db(messages.retry_reply)(self.conversation_id, action.message):
            raise UserInputError("That reply cannot be retried.")

    async def do_cancel(self, action: inbound.Cancel) -> None:
        pair = await db(access.owned_pair)(self.scope["user"], self.conversation_id, action.pair)
        if pair is None or await db(pairing.cancel)(pair.pk, by="the user") is None:
            raise UserInputError("That tool call is not running any more.")

    async def do_approve(self, action: inbound.Approve) -> None:
        try:
            await db(approvals.approve)(
                action.pair, self.scope["user"], conversation_id=self.conversation_id
            )
        except NotAllowed as exc:
            raise UserInputError(str(exc)) from None

    async def do_deny(self, action: inbound.Deny) -> None:
        try:
            await db(approvals.deny)(
                action.pair,
                self.scope["user"],
                action.note,
                conversation_id=self.conversation_id,
            )
        except NotAllowed as exc:
            raise UserInputError(str(exc)) from None

    actions: dict[str, Callable[..., Awaitable[None]]] = {
        "sync": do_sync,
        "send": do_send,
        "stop": do_stop,
        "retry": do_retry,
        "cancel": do_cancel,
        "approve": do_approve,
        "deny": do_deny,
    }

    async def check_rate(self) -> None:
        per_minute = settings.TANDEM_RATE_LIMIT_PER_MINUTE
        if not await ratelimit.allow_from_loop(self.scope["user"].pk, per_minute=per_minute):
            raise UserInputError(TOO_FAST)

    # --- from the channel layer ------------------------------------------------------------

    async def push_changes(self, *, resync: bool = False, rung_at: float | None = None) -> None:
        if not (resync or self.tab.synced):
            return  # a doorbell before the page's sync: the sync answers with all of it
        shared = await fanout.changes_since(
            self.conversation_id, self.tab.seq, self.tab.rev, resync=resync, rung_at=rung_at
        )
        if shared is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.send(text_data="".join(self.tab.apply_changes(shared)))

    async def resync(self) -> None:
        await self.push_changes(resync=True)

    async def conv_changed(self, event: dict[str, Any]) -> None:
        """A doorbell: the change it carries if it answers this tab, else a read."""
        carried = fanout.carried(self.conversation_id, event)
        if carried is not None and self.tab.takes(*carried):
            await self.send(text_data="".join(self.tab.apply_changes(carried[1])))
            return
        await self.push_changes(rung_at=event.get("at"))

    async def reply_delta(self, event: dict[str, Any]) -> None:
        if self.tab.needs_refresh(event["message"]):
            await self.push_changes()
        frame = self.tab.apply_delta(
            event["message"], event.get("channel", "text"), event["offset"], event["text"]
        )
        if frame:
            await self.send(text_data=frame)

    async def reply_markdown(self, event: dict[str, Any]) -> None:
        if self.tab.needs_refresh(event["message"]):
            await self.push_changes()
        frame = self.tab.apply_markdown(
            event["message"], event["first"], event["blocks"], event["open"], event["chars"]
        )
        if frame:
            await self.send(text_data=frame)

    async def reply_snapshot(self, event: dict[str, Any]) -> None:
        frame = self.tab.apply_snapshot(
            event["message"], {"text": event["text"], "thinking": event.get("thinking", "")}
        )
        if frame:
            await self.send(text_data=frame)

    async def reply_tool_input(self, event: dict[str, Any]) -> None:
        frame = self.tab.apply_tool_input(
            event["message"], event["index"], event["id"], event["name"], event["snapshot"]
        )
        if frame:
            await self.send(text_data=frame)

    async def tool_progress(self, event: dict[str, Any]) -> None:
        await self.send(
            text_data=outbound.progress(event["pair"], event["fraction"], event["text"])
        )


def _int(value: object) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(0, value)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return 0


class ConversationListConsumer(GroupSocket):
    """The sidebar of every page: the user's conversations and their live state."""

    async def connect(self) -> None:
        user = await self.signed_in_user()
        if user is None:
            return
        self.current = _int(self.scope["url_route"]["kwargs"].get("current", 0)) or None
        await self.join(events.user_group(user.pk))

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if await self.admit_frame():
            self.want_push()  # any frame (the page's sync) asks for the current list

    async def resync(self) -> None:
        await self.push()

    async def convlist_changed(self, event: dict[str, Any]) -> None:
        self.want_push()

    pushing: asyncio.Task[None] | None = None
    again = False

    def want_push(self) -> None:
        """Send the current list soon. One read at a time: the bells that ring while the list
        is read are answered together by one more read after it (so a burst of doorbells,
        as a reply starts, costs the sidebar two reads, not one each), and no older list can
        overtake a newer one."""
        self.again = True
        if self.pushing is None or self.pushing.done():
            self.pushing = asyncio.ensure_future(self._push_until_quiet())

    async def _push_until_quiet(self) -> None:
        try:
            while self.again:
                self.again = False
                await self.push()
        except Exception:
            logger.exception("the conversation list could not be sent")

    async def disconnect(self, code: int) -> None:
        if self.pushing is not None:
            self.pushing.cancel()
        await super().disconnect(code)

    async def push(self) -> None:
        await self.send(
            text_data=await fanout.read(outbound.conversation_list)(
                self.scope["user"].pk, self.current
            )
        )
