"""chat.queries.search: a user's own titles and messages, the words highlighted and escaped.

Every test here runs on SQLite (the default test database) and again on PostgreSQL, through
``test_search_postgres.py``, which runs this file against a real server; where the two differ
(stemming), the test says what each does.
"""

from __future__ import annotations

import html
import os
import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from chat.models import Conversation, Message
from chat.queries.search import highlight, search, words_of

pytestmark = pytest.mark.django_db

ON_POSTGRES = connection.vendor == "postgresql"


def _message(conversation: Conversation, text: str, *, kind: str = "prompt") -> Message:
    seq = conversation.messages.count() + 1
    role = "user" if kind in ("prompt", "tool_results") else "assistant"
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if kind == "tool_results":
        content = [{"type": "tool_result", "tool_use_id": "toolu_1", "content": text}]
    return Message.objects.create(
        conversation=conversation, seq=seq, role=role, kind=kind, content=content
    )


@pytest.fixture
def picnic(owner: Any) -> Conversation:
    conversation = Conversation.objects.create(owner=owner, title="Picnic plans")
    _message(conversation, "Where should we go for the picnic on Saturday?")
    _message(conversation, "The **lakeside park** has shade and tables.", kind="reply")
    return conversation


def test_it_runs_on_the_database_it_was_meant_for() -> None:
    """SQLite by default; PostgreSQL when test_search_postgres.py runs this file."""
    assert connection.vendor == os.environ.get("TANDEM_EXPECT_VENDOR", "sqlite")


def test_it_finds_a_message_and_links_to_it(owner: Any, picnic: Conversation) -> None:
    [hit] = search(owner.pk, "lakeside")
    reply = picnic.messages.get(kind="reply")
    assert (hit.conversation_id, hit.message_id, hit.title) == (picnic.pk, reply.pk, "Picnic plans")
    assert hit.url == f"/conversations/{picnic.pk}/#msg-{reply.pk}"
    assert "<mark>lakeside</mark>" in hit.snippet


def test_it_finds_titles_first(owner: Any, picnic: Conversation) -> None:
    hits = search(owner.pk, "picnic")
    assert (hits[0].conversation_id, hits[0].message_id) == (picnic.pk, None)
    assert hits[0].snippet == "<mark>Picnic</mark> plans"
    assert len(hits) == 2  # the title and the prompt that says "picnic"


def test_every_word_must_match(owner: Any, picnic: Conversation) -> None:
    assert len(search(owner.pk, "lakeside shade")) == 1
    assert search(owner.pk, "lakeside volcano") == []


def test_it_never_finds_another_users_conversations(
    owner: Any, outsider: Any, picnic: Conversation
) -> None:
    theirs = Conversation.objects.create(owner=outsider, title="Secret picnic")
    _message(theirs, "The secret lakeside spot")
    assert {h.conversation_id for h in search(owner.pk, "lakeside")} == {picnic.pk}
    assert {h.conversation_id for h in search(outsider.pk, "lakeside")} == {theirs.pk}
    assert search(outsider.pk, "shade") == []


def test_it_searches_the_text_not_the_stored_json_or_tool_results(
    owner: Any, picnic: Conversation
) -> None:
    _message(picnic, "tabulated weather data", kind="tool_results")
    assert search(owner.pk, "type") == []  # a JSON key of every block
    assert search(owner.pk, "tabulated") == []


def test_word_forms_match_on_postgresql_and_substrings_elsewhere(
    owner: Any, picnic: Conversation
) -> None:
    """PostgreSQL's English stemming finds "tables" for "table"; the fallback finds any
    substring, so "able" matches "tables" there but not as a word on PostgreSQL."""
    assert len(search(owner.pk, "table")) == 1
    assert len(search(owner.pk, "able")) == (0 if ON_POSTGRES else 1)


def test_it_ignores_punctuation_and_empty_queries(owner: Any, picnic: Conversation) -> None:
    assert search(owner.pk, "  ") == [] and search(owner.pk, "!!! ''") == []
    assert words_of("lakeside & (shade) | !tables:*") == ["lakeside", "shade", "tables"]
    assert len(search(owner.pk, "lakeside & (shade) | !tables:*")) == 1


def test_snippets_are_escaped_before_marking(owner: Any) -> None:
    conversation = Conversation.objects.create(owner=owner, title="<b>x</b>")
    _message(conversation, 'The <script>alert("mark")</script> tag & <mark>fake</mark>')
    [hit] = search(owner.pk, "tag")  # (PostgreSQL's parser skips what is inside <script>)
    assert "<script>" not in hit.snippet and "<mark>fake" not in hit.snippet
    assert "&lt;script&gt;alert(&quot;mark&quot;)&lt;/script&gt; <mark>tag</mark>" in hit.snippet


@given(
    st.text(max_size=300),
    st.lists(st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1), max_size=3),
)
def test_a_highlighted_snippet_is_the_escaped_text_with_marks_only(
    text: str, words: list[str]
) -> None:
    snippet = str(highlight(text, words))
    assert re.sub(r"</?mark>", "", snippet).count("<") == 0
    plain = html.unescape(re.sub(r"</?mark>", "", snippet)).strip("…")
    assert plain in text


def test_the_page_shows_results_for_the_user_only(
    client: Client, owner: Any, outsider: Any, picnic: Conversation
) -> None:
    client.force_login(outsider)
    theirs = client.get("/search/", {"q": "lakeside"}).content.decode()
    assert "0 results for" in theirs and f"/conversations/{picnic.pk}/" not in theirs
    assert "shade" not in theirs
    client.force_login(owner)
    page = client.get("/search/", {"q": "lakeside"}).content.decode()
    assert f'href="/conversations/{picnic.pk}/#msg-' in page
    assert "<mark>lakeside</mark>" in page and "1 result for" in page
    assert 'aria-label="Search conversations"' in page and 'value="lakeside"' in page


def test_the_page_requires_login(client: Client) -> None:
    response = client.get("/search/", {"q": "x"})
    assert response.status_code == 302 and "/login/" in response["Location"]
