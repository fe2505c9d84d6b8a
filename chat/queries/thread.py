"""Reading a conversation for display: the page, and what changed since a tab's cursor."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import F, Prefetch, Q, QuerySet

from chat import compiled
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


def _views(
    conversation: Conversation,
    messages: list[Message],
    pairs: dict[int, list[ToolPair]] | None = None,
) -> list[MessageView]:
    """Views of ``messages``, with their cards from ``pairs`` (message id -> cards in block
    order) or, without it, from the messages' prefetched ``tool_pairs``."""
    views = []
    for message in messages:
        cards = pairs.get(message.pk, []) if pairs is not None else message.tool_pairs.all()
        view = MessageView(message, pairs=list(cards))
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


# What a doorbell asks: compiled once (chat/compiled.py), in three shapes -- an ordinary
# doorbell when only new messages may exist, one when something changed (the rev moved), and a
# resync (a socket that just opened), which also wants streaming messages and running cards.


@compiled.select
def _conversation(conversation_id: int) -> QuerySet[Conversation]:
    return Conversation.objects.filter(pk=conversation_id)[:1]


def _wanted(seq: int, rev: int, *, resync: bool, via: str = "") -> Q:
    """Messages a tab at (seq, rev) lacks (``via="message__"``: the cards of those)."""
    wanted = Q(**{f"{via}seq__gt": seq}) | Q(**{f"{via}rev__gt": rev})
    if resync:
        wanted |= Q(**{f"{via}status": Message.Status.STREAMING})
    return wanted


@compiled.select
def _messages_since(conversation_id: int, seq: int, rev: int) -> QuerySet[Message]:
    found = Message.objects.filter(conversation_id=conversation_id)
    return found.filter(_wanted(seq, rev, resync=False)).order_by("seq")


@compiled.select
def _messages_resync(conversation_id: int, seq: int, rev: int) -> QuerySet[Message]:
    found = Message.objects.filter(conversation_id=conversation_id)
    return found.filter(_wanted(seq, rev, resync=True)).order_by("seq")


def _cards(conversation_id: int, cards: Q) -> QuerySet[ToolPair]:
    rows = ToolPair.objects.filter(conversation_id=conversation_id).filter(cards)
    return rows.annotate(message_seq=F("message__seq")).order_by("block_index", "pk")


@compiled.select
def _cards_of_new(conversation_id: int, seq: int, rev: int) -> QuerySet[ToolPair]:
    return _cards(conversation_id, _wanted(seq, rev, resync=False, via="message__"))


@compiled.select
def _cards_changed(conversation_id: int, seq: int, rev: int) -> QuerySet[ToolPair]:
    elsewhere = Q(message__seq__lte=seq) & Q(rev__gt=rev)
    return _cards(conversation_id, _wanted(seq, rev, resync=False, via="message__") | elsewhere)


@compiled.select
def _cards_resync(conversation_id: int, seq: int, rev: int) -> QuerySet[ToolPair]:
    elsewhere = Q(message__seq__lte=seq) & (Q(rev__gt=rev) | Q(status=ToolPair.Status.RUNNING))
    return _cards(conversation_id, _wanted(seq, rev, resync=True, via="message__") | elsewhere)


def cursor(conversation_id: int) -> tuple[int, int] | None:
    """The conversation's cursor (highest seq, rev): where a tab that has all of it stands."""
    conversation = _conversation.one(conversation_id)
    if conversation is None:
        return None
    return conversation.next_seq - 1, conversation.rev


def changes_since(
    conversation_id: int, seq: int, rev: int, *, resync: bool = False
) -> Changes | None:
    """What a tab at (seq, rev) lacks: new messages, changed ones, changed cards.

    On a resync (a socket that just opened) streaming messages and running tool pairs are
    included too: their text and progress change without a new rev. A tab that stays
    connected gets those as live frames instead, so an ordinary doorbell skips them.

    Three queries (the conversation, its messages, the cards of those and the cards that
    changed), one when the tab already has everything.
    """
    conversation = _conversation.one(conversation_id)
    if conversation is None:
        return None
    top = max(seq, conversation.next_seq - 1)
    if not resync and conversation.rev <= rev and top <= seq:
        return Changes(conversation.title, conversation.rev, top, [], [], [])
    found = (_messages_resync if resync else _messages_since)(conversation_id, seq, rev)
    found_ids = {m.pk for m in found}
    # One query for both: the cards of the messages found, and cards that changed elsewhere.
    by_message: dict[int, list[ToolPair]] = {}
    pairs: list[ToolPair] = []
    if resync:
        rows = _cards_resync(conversation_id, seq, rev)
    elif conversation.rev > rev:
        rows = _cards_changed(conversation_id, seq, rev)
    elif found_ids:
        rows = _cards_of_new(conversation_id, seq, rev)
    else:
        rows = []
    for pair in rows:
        if pair.message_id in found_ids:
            by_message.setdefault(pair.message_id, []).append(pair)
        elif pair.message_seq <= seq and (resync or conversation.rev > rev):  # type: ignore[attr-defined]
            pairs.append(pair)
        # else: the card of a message written after the messages were read (the next doorbell)
    new = [m for m in found if m.seq > seq]
    return Changes(
        title=conversation.title,
        rev=conversation.rev,
        seq=max(top, max((m.seq for m in new), default=0)),
        new=_views(conversation, new, by_message),
        changed=_views(conversation, [m for m in found if m.seq <= seq], by_message),
        pairs=sorted(pairs, key=lambda p: p.pk),
    )


def _thinking(message: Message) -> str:
    return "".join(
        str(b.get("thinking", "")) for b in message.content if b.get("type") == "thinking"
    )
