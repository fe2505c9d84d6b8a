"""Searching one user's own conversations: titles and the text of prompts and replies.

On PostgreSQL: full-text search (English stemming, every word must match) over the title and
the text blocks of each message (``jsonb_to_tsvector`` of the stored content's text blocks,
so neither JSON keys nor tool input count). Elsewhere (SQLite): a simple case-insensitive
scan of the same text for every word. The snippet is highlighted here, safely: each piece of
the text is escaped, then ``<mark>`` goes around the pieces that match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.contrib.postgres.search import SearchQuery, SearchVector, SearchVectorField
from django.db import connection
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from chat.models import Conversation, Message

LIMIT = 50
MAX_WORDS = 10
MAX_QUERY_CHARS = 200
SNIPPET_CHARS = 180
SEARCHED_KINDS = (Message.Kind.PROMPT, Message.Kind.REPLY)

# The text blocks of a message's content, as a tsvector (PostgreSQL 11+).
_MESSAGE_TEXT = RawSQL(
    "jsonb_to_tsvector('english', "
    'jsonb_path_query_array("chat_message"."content", \'$[*] ? (@.type == "text").text\'), '
    "'[\"string\"]')",
    [],
    output_field=SearchVectorField(),
)


@dataclass(frozen=True)
class Hit:
    conversation_id: int
    title: str
    message_id: int | None  # None: the title matched
    snippet: SafeString  # escaped, the matching words in <mark>

    @property
    def url(self) -> str:
        anchor = f"#msg-{self.message_id}" if self.message_id else ""
        return f"/conversations/{self.conversation_id}/{anchor}"


def words_of(query: str) -> list[str]:
    """The words searched for: letters and digits, at most ``MAX_WORDS`` of them."""
    return re.findall(r"\w+", query[:MAX_QUERY_CHARS])[:MAX_WORDS]


def search(user_id: int, query: str, *, limit: int = LIMIT) -> list[Hit]:
    """The user's conversations whose title, then messages whose text, hold every word."""
    words = words_of(query)
    if not words:
        return []
    conversations = Conversation.objects.filter(owner_id=user_id).order_by("-updated_at")
    messages = Message.objects.filter(
        conversation__owner_id=user_id, kind__in=SEARCHED_KINDS
    ).select_related("conversation")
    if connection.vendor == "postgresql":
        found_titles, found_messages = _full_text(conversations, messages, words, limit)
    else:
        found_titles, found_messages = _scan(conversations, messages, words, limit)
    hits = [Hit(c.pk, c.title, None, highlight(c.title, words)) for c in found_titles]
    hits += [
        Hit(m.conversation_id, m.conversation.title, m.pk, highlight(m.text, words))
        for m in found_messages
    ]
    return hits[:limit]


def _full_text(
    conversations: QuerySet[Conversation],
    messages: QuerySet[Message],
    words: list[str],
    limit: int,
) -> tuple[list[Conversation], list[Message]]:
    query = SearchQuery(" ".join(words), config="english", search_type="plain")
    titles = conversations.annotate(document=SearchVector("title", config="english"))
    found = messages.annotate(document=_MESSAGE_TEXT).filter(document=query)
    return (
        list(titles.filter(document=query)[:limit]),
        list(found.order_by("-created_at", "-pk")[:limit]),
    )


def _scan(
    conversations: QuerySet[Conversation],
    messages: QuerySet[Message],
    words: list[str],
    limit: int,
) -> tuple[list[Conversation], list[Message]]:
    """The fallback: every word, ignoring case, anywhere in the text."""
    folded = [w.casefold() for w in words]

    def matches(text: str) -> bool:
        text = text.casefold()
        return all(w in text for w in folded)

    titles = [c for c in conversations if matches(c.title)][:limit]
    found: list[Message] = []
    for message in messages.order_by("-created_at", "-pk").iterator(chunk_size=500):
        if matches(message.text):
            found.append(message)
            if len(found) >= limit:
                break
    return titles, found


def highlight(text: str, words: list[str], *, width: int = SNIPPET_CHARS) -> SafeString:
    """A window of ``text`` around the first match, escaped, each match in ``<mark>``.

    A match is a word that starts with one of ``words`` (ignoring case), so "tea" marks
    "teapot" too; a text that matched only by stemming shows its beginning, unmarked.
    """
    if not words:
        return mark_safe(escape(text[:width]))  # noqa: S308 - escaped
    alternatives = "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))
    pattern = re.compile(rf"(?<!\w)(?:{alternatives})\w*", re.IGNORECASE)
    first = pattern.search(text)
    start = max(0, first.start() - width // 3) if first else 0
    window = text[start : start + width]
    pieces: list[str] = []
    position = 0
    for match in pattern.finditer(window):
        pieces.append(escape(window[position : match.start()]))
        pieces.append(f"<mark>{escape(match.group())}</mark>")
        position = match.end()
    pieces.append(escape(window[position:]))
    before = "…" if start > 0 else ""
    after = "…" if start + width < len(text) else ""
    return mark_safe(before + "".join(pieces) + after)  # noqa: S308 - every piece escaped
