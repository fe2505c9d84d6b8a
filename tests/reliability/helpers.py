"""Rows as a server leaves them when it dies, and a process id that is certainly dead."""

from __future__ import annotations

import asyncio
import datetime as dt
import socket
import subprocess
from collections.abc import Awaitable, Callable
from typing import Any

from django.utils import timezone

from chat.models import Conversation, Message, ToolPair

HOST = socket.gethostname()


def dead_instance() -> str:
    """An INSTANCE_ID ("host:pid:uuid") of a process on this host that has exited."""
    child = subprocess.Popen(["true"])
    child.wait()
    return f"{HOST}:{child.pid}:deadbeef"


def add(
    conversation: Conversation,
    role: str,
    kind: str,
    text: str = "",
    *,
    answered: bool = True,
    **fields: Any,
) -> Message:
    """Append a message the way the services number them, without ringing or kicking.

    A user message counts as answered (a turn was started for it) unless ``answered=False``.
    """
    content = [{"type": "text", "text": text}] if text else []
    message = Message.objects.create(
        conversation=conversation,
        seq=conversation.next_seq,
        role=role,
        kind=kind,
        content=content,
        **fields,
    )
    conversation.next_seq += 1
    if role == "user" and answered:
        conversation.answered_seq = message.seq
    conversation.save(update_fields=["next_seq", "answered_seq"])
    return message


def hold_lease(conversation: Conversation, owner: str, seconds: float = 30.0) -> None:
    Conversation.objects.filter(pk=conversation.pk).update(
        lease_owner=owner, lease_expires_at=timezone.now() + dt.timedelta(seconds=seconds)
    )


def running_pair(reply: Message, name: str, args: dict[str, Any], runner: str) -> ToolPair:
    """A tool call of ``reply`` that was running in ``runner`` when it stopped."""
    now = timezone.now()
    tool_use_id = f"toolu_{reply.pk}_{name}"
    reply.content = [
        *reply.content,
        {"type": "tool_use", "id": tool_use_id, "name": name, "input": args},
    ]
    reply.save(update_fields=["content"])
    return ToolPair.objects.create(
        conversation_id=reply.conversation_id,
        message=reply,
        tool_use_id=tool_use_id,
        tool_name=name,
        input=args,
        status=ToolPair.Status.RUNNING,
        decision="allowed",
        runner=runner,
        attempts=1,
        started_at=now,
        heartbeat_at=now,
        deadline_at=now + dt.timedelta(seconds=60),
    )


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 10.0) -> None:
    """Wait until ``check()`` is true (polling the database), or fail after ``within`` s."""
    async with asyncio.timeout(within):
        while not await check():  # noqa: ASYNC110 - polls the database
            await asyncio.sleep(0.05)
