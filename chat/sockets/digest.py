"""A conversation's changes since a cursor, rendered once, as plain data a doorbell can carry.

``build`` renders what ``chat.queries.thread.changes_since`` found (the new messages, the
changed ones, the changed cards) and keeps of each message only what a tab's state needs
(``chat.sockets.tab_state``). Everything in a ``Digest`` is a string, an int or a tuple of
those, so one digest answers every tab at its cursor: read after a tab's doorbell
(``chat.sockets.fanout``), or built by the writer and carried in the doorbell itself, through
the in-memory channel layer or Redis (msgpack turns tuples into lists; ``from_wire`` takes
either).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from chat import markdown_stream
from chat.models import Message
from chat.queries.thread import Changes, MessageView
from chat.sockets import outbound


class View(NamedTuple):
    """What a tab keeps of one message it was sent."""

    id: int
    streaming: bool
    text_chars: int  # of a streaming reply: its text sent so far...
    text_blocks: int  # ...as this many finished Markdown blocks
    thinking_chars: int
    pairs: tuple[int, ...]  # tool pair ids whose cards a streaming reply shows


class Card(NamedTuple):
    """A tool card that changed, of a message the tab already has."""

    pk: int
    message_id: int
    block_index: int
    replace: str  # the card, replacing the one the tab shows
    html: str  # the card alone, for a tab that appends it to a reply streaming there


class Digest(NamedTuple):
    """Tuples all the way down: no receiver can change it, so a process shares one."""

    title: str
    rev: int
    seq: int
    new: str  # the new messages, appended to the thread
    replaced: tuple[tuple[int, str], ...]  # (message id, its replacement)
    views: tuple[View, ...]  # the new messages, then the changed ones
    cards: tuple[Card, ...]  # in pair id order


def build(changes: Changes) -> Digest:
    return Digest(
        title=changes.title,
        rev=changes.rev,
        seq=changes.seq,
        new=_plain(outbound.append_messages(changes.new)),
        replaced=tuple((v.id, _plain(outbound.replace_message(v))) for v in changes.changed),
        views=tuple(_view(view) for view in [*changes.new, *changes.changed]),
        cards=tuple(
            Card(
                pair.pk,
                pair.message_id,
                pair.block_index,
                _plain(outbound.replace_card(pair)),
                _plain(outbound.card(pair)),
            )
            for pair in changes.pairs
        ),
    )


def _view(view: MessageView) -> View:
    if view.message.status != Message.Status.STREAMING:
        return View(view.id, False, 0, 0, 0, ())
    text = view.live_text or ""
    return View(
        view.id,
        True,
        len(text),
        len(markdown_stream.render(text).blocks),
        len(view.live_thinking or ""),
        tuple(pair.pk for pair in view.pairs),
    )


def _plain(html: str) -> str:
    """A rendered fragment as a plain ``str``: Django's ``SafeString`` would be rebuilt, not
    shared, by every deep copy the in-memory channel layer makes for each tab."""
    return str.__str__(html)


def from_wire(wire: Sequence[Any]) -> Digest:
    """A digest as a doorbell delivers it: itself (the in-memory layer) or lists (Redis)."""
    title, rev, seq, new, replaced, views, cards = wire
    return Digest(
        title,
        rev,
        seq,
        new,
        tuple((message_id, html) for message_id, html in replaced),
        tuple(
            View(i, streaming, chars, blocks, thinking, tuple(pairs))
            for i, streaming, chars, blocks, thinking, pairs in views
        ),
        tuple(Card(*card) for card in cards),
    )


def size(digest: Digest) -> int:
    """Characters of HTML it carries."""
    return (
        len(digest.new)
        + sum(len(html) for _, html in digest.replaced)
        + sum(len(card.replace) + len(card.html) for card in digest.cards)
    )
