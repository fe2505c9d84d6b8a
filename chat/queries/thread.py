"""Reading a conversation for display: the page, and what changed since a tab's cursor."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Prefetch, Q

from chat.models import Conversation, Message, ToolPair
from chat.runtime import engine


@dataclass
class MessageView:
    """A message with what its template needs: its tool cards and, if streaming, live text."""

    message: Message
    pairs: list[ToolPair] = field(default_factory=list)
    live_text: str | None = None
    live_thinking: str | None = None
    queued: bool = False

    @property
    def parts(self) -> list[dict[str, Any]]:
        """A finished reply in block order: text to render, and a card where a tool was called."""
        by_id = {p.tool_use_id: p for p in self.pairs}
        parts: list[dict[str, Any]] = []
        for block in self.message.content:
            if block.get("type") == "text" and str(block.get("text", "")).strip():
                parts.append({"kind": "text", "text": block["text"]})
            elif block.get("type") == "tool_use" and block.get("id") in by_id:
                parts.append({"kind": "tool", "pair": by_id.pop(block["id"])})
        parts.extend({"kind": "tool", "pair": p} for p in by_id.values())
        return parts

    @property
    def thinking_text(self) -> str:
        """The thinking shown: streamed so far, or the finished reply's thinking blocks."""
        if self.message.status == Message.Status.STREAMING:
            return self.live_thinking or ""
        return _thinking(self.message)

    @property
    def id(self) -> int:
        return self.message.pk

    @property
    def seq(self) -> int:
        return self.message.seq


@dataclass
class Changes:
    title: str
    rev: int
    seq: int
    new: list[MessageView]
    changed: list[MessageView]
    pairs: list[ToolPair]


def _views(conversation: Conversation, messages: list[Message]) -> list[MessageView]:
    views = []
    for message in messages:
        view = MessageView(message, pairs=list(message.tool_pairs.all()))
        if message.status == Message.Status.STREAMING:
            live = engine.live_reply(message.pk)
            view.live_text = live.text if live is not None else message.text
            view.live_thinking = live.thinking if live is not None else _thinking(message)
        if message.role == Message.Role.USER and message.kind == Message.Kind.PROMPT:
            view.queued = message.seq > conversation.answered_seq
        views.append(view)
    return views


def _messages(conversation: Conversation) -> Any:
    return conversation.messages.prefetch_related(
        Prefetch("tool_pairs", queryset=ToolPair.objects.order_by("block_index"))
    ).order_by("seq")


def page(conversation: Conversation) -> tuple[list[MessageView], int]:
    """Every message of the thread, and the highest seq."""
    messages = list(_messages(conversation))
    return _views(conversation, messages), max((m.seq for m in messages), default=0)


def changes_since(
    conversation_id: int, seq: int, rev: int, *, resync: bool = False
) -> Changes | None:
    """What a tab at (seq, rev) lacks: new messages, changed ones, changed cards.

    On a resync (a socket that just opened) streaming messages and running tool pairs are
    included too: their text and progress change without a new rev. A tab that stays
    connected gets those as live frames instead, so an ordinary doorbell skips them.

    At most four queries (the conversation, its messages and their cards, the cards that
    changed), one when the tab already has everything.
    """
    conversation = Conversation.objects.filter(pk=conversation_id).first()
    if conversation is None:
        return None
    top = max(seq, conversation.next_seq - 1)
    if not resync and conversation.rev <= rev and top <= seq:
        return Changes(conversation.title, conversation.rev, top, [], [], [])
    wanted = Q(seq__gt=seq) | Q(rev__gt=rev)
    if resync:
        wanted |= Q(status=Message.Status.STREAMING)
    found = list(_messages(conversation).filter(wanted))
    new = [m for m in found if m.seq > seq]
    changed = [m for m in found if m.seq <= seq]
    pairs: list[ToolPair] = []
    if resync or conversation.rev > rev:
        changed_pairs = Q(rev__gt=rev)
        if resync:
            changed_pairs |= Q(status=ToolPair.Status.RUNNING)
        pairs = list(
            ToolPair.objects.filter(conversation_id=conversation_id, message__seq__lte=seq)
            .filter(changed_pairs)
            .exclude(message_id__in=[m.pk for m in found])
            .order_by("pk")
        )
    return Changes(
        title=conversation.title,
        rev=conversation.rev,
        seq=max(top, max((m.seq for m in new), default=0)),
        new=_views(conversation, new),
        changed=_views(conversation, changed),
        pairs=pairs,
    )


def _thinking(message: Message) -> str:
    return "".join(
        str(b.get("thinking", "")) for b in message.content if b.get("type") == "thinking"
    )
