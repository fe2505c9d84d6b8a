"""Socket test helpers: the socket stack without the engine, and another user's rows to aim at.

Without the engine no model turn, sweeper or recovery runs, so every database change a test
sees is the consumer's own (the sweeper would rightly "recover" the hand-made rows below).
"""

from __future__ import annotations

from typing import Any

from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from chat.models import Conversation, Message, ToolPair
from chat.routing import websocket_urlpatterns
from chat.services import policy
from chat.sockets.origin_check import SameOriginValidator


def socket_stack() -> Any:
    """project.asgi's WebSocket stack minus the engine middleware."""
    return SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))


def communicator(
    app: Any, path: str, cookie: bytes = b"", *, origin: bytes | None = b"http://localhost"
) -> WebsocketCommunicator:
    headers = [(b"cookie", cookie), (b"host", b"localhost")]
    if origin is not None:
        headers.append((b"origin", origin))
    return WebsocketCommunicator(app, path, headers=headers)


def foreign_rows(outsider: Any) -> dict[str, int]:
    """Ids of the outsider's conversation, a streaming and a failed reply, a running and a held
    tool call: each would be changed by a stop, retry, cancel, approve or deny that got through."""
    other = Conversation.objects.create(owner=outsider, title="Theirs", next_seq=4, rev=3)
    Message.objects.create(
        conversation=other,
        seq=1,
        role="user",
        kind="prompt",
        content=[{"type": "text", "text": "hi"}],
    )
    streaming = Message.objects.create(
        conversation=other, seq=2, role="assistant", kind="reply", status="streaming"
    )
    failed = Message.objects.create(
        conversation=other, seq=3, role="assistant", kind="reply", status="error"
    )
    running = ToolPair.objects.create(
        conversation=other,
        message=streaming,
        tool_use_id="toolu_foreign_running",
        tool_name="calculate",
        status=ToolPair.Status.RUNNING,
    )
    held = ToolPair.objects.create(
        conversation=other,
        message=streaming,
        tool_use_id="toolu_foreign_held",
        tool_name="calculate",
        status=ToolPair.Status.AWAITING_APPROVAL,
        decision=policy.AWAITING_OWNER,
    )
    return {
        "conversation": other.pk,
        "streaming": streaming.pk,
        "failed": failed.pk,
        "running": running.pk,
        "held": held.pk,
    }


def snapshot(conversation_id: int) -> list[Any]:
    """Every stored field of a conversation, its messages and its tool calls."""
    return [
        Conversation.objects.filter(pk=conversation_id).values().get(),
        list(Message.objects.filter(conversation_id=conversation_id).order_by("seq").values()),
        list(ToolPair.objects.filter(conversation_id=conversation_id).order_by("pk").values()),
    ]
