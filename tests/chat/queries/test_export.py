"""chat.queries.export and its page: a readable transcript, or JSON exactly as stored."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from chat.models import Conversation, Message, ToolPair
from chat.queries import export
from chat.services import messages, pairing

pytestmark = pytest.mark.django_db

CALL = {"type": "tool_use", "id": "toolu_1", "name": "calculate", "input": {"expression": "6*7"}}
USAGE = {"input_tokens": 120, "output_tokens": 30}


@pytest.fixture(autouse=True)
def _no_tool_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pairing, "enqueue_run", lambda pair_id: None)


@pytest.fixture
def talk(conversation: Conversation, price_table: None) -> Conversation:
    """A prompt, then a reply that thought, called a tool (which answered 42) and said more."""
    Conversation.objects.filter(pk=conversation.pk).update(title="Sums & <Tools>: a test!")
    messages.post_user_message(conversation.pk, "What is **6*7**?")
    reply = messages.start_reply(conversation.pk, answered_seq=1)
    content = [
        {"type": "thinking", "thinking": "Multiply.\nThen answer.", "signature": "sig"},
        {"type": "text", "text": "Let me compute that."},
        CALL,
        {"type": "text", "text": "It is **42**, see ```` ``` ```` fences."},
    ]
    pair = pairing.store_tool_call(conversation.pk, reply.pk, CALL, 2)
    pairing.mark_running(pair.pk, "test")
    pairing.finish(
        pair.pk, status=ToolPair.Status.SUCCEEDED, content="42", is_error=False, event="done"
    )
    messages.finish_reply(
        reply.pk,
        content=content,
        status=Message.Status.COMPLETE,
        stop_reason="end_turn",
        usage=USAGE,
    )
    conversation.refresh_from_db()
    return conversation


def test_the_transcript_reads_like_the_page(talk: Conversation) -> None:
    text = export.markdown(talk)
    assert text.startswith("# Sums & <Tools>: a test!\n\n## You\n\nWhat is **6*7**?\n\n## Claude")
    assert "> **Thinking**\n>\n> Multiply.\n> Then answer." in text
    # the call where the model made it, with its input and result, then the rest of the reply
    call = text.index("**Tool call `calculate`**: Succeeded")
    assert text.index("Let me compute that.") < call < text.index("It is **42**")
    assert '```json\n{\n  "expression": "6*7"\n}\n```' in text
    assert "**Result**\n\n```\n42\n```" in text


def test_a_fence_in_a_result_cannot_close_the_transcripts_fence(talk: Conversation) -> None:
    pair = ToolPair.objects.get()
    ToolPair.objects.filter(pk=pair.pk).update(result_content="a\n```\nb ````` c", is_error=True)
    text = export.markdown(talk)
    assert "**Error**\n\n``````\na\n```\nb ````` c\n``````" in text


def test_the_json_keeps_the_content_blocks_exactly_as_stored(talk: Conversation) -> None:
    data = json.loads(json.dumps(export.as_json(talk)))  # what the view serializes
    reply = talk.messages.get(kind="reply")
    assert [m["kind"] for m in data["messages"]] == ["prompt", "reply"]
    assert data["messages"][1]["content"] == reply.content
    assert data["messages"][1]["usage"] == USAGE
    [pair] = data["tool_pairs"]
    assert pair["tool_use_id"] == "toolu_1" and pair["input"] == CALL["input"]
    assert (pair["status"], pair["result_content"], pair["is_error"]) == ("succeeded", "42", False)
    assert (data["usage"]["input"], data["usage"]["output"]) == (120, 30)
    assert data["conversation"]["title"] == "Sums & <Tools>: a test!"


def test_the_files_are_named_after_the_title(talk: Conversation) -> None:
    assert export.filename(talk, "md") == "sums-tools-a-test.md"
    Conversation.objects.filter(pk=talk.pk).update(title="???")
    talk.refresh_from_db()
    assert export.filename(talk, "json") == f"conversation-{talk.pk}.json"


def test_the_owner_downloads_markdown_and_json(
    client: Client, owner: Any, talk: Conversation
) -> None:
    client.force_login(owner)
    md = client.get(f"/conversations/{talk.pk}/export/")
    assert md["Content-Type"] == "text/markdown; charset=utf-8"
    assert md["Content-Disposition"] == 'attachment; filename="sums-tools-a-test.md"'
    assert md.content.decode() == export.markdown(talk)
    data = client.get(f"/conversations/{talk.pk}/export/", {"format": "json"})
    assert data["Content-Disposition"] == 'attachment; filename="sums-tools-a-test.json"'
    assert data.json()["messages"][1]["content"] == talk.messages.get(kind="reply").content


def test_the_conversation_page_links_to_both(
    client: Client, owner: Any, talk: Conversation
) -> None:
    client.force_login(owner)
    page = client.get(f"/conversations/{talk.pk}/").content.decode()
    assert f'href="/conversations/{talk.pk}/export/" download>Export</a>' in page
    assert f'href="/conversations/{talk.pk}/export/?format=json" download>' in page


@pytest.mark.parametrize("fmt", ["", "json"])
def test_an_outsider_gets_404_and_a_visitor_the_login_page(
    client: Client, outsider: Any, talk: Conversation, fmt: str
) -> None:
    url = f"/conversations/{talk.pk}/export/?format={fmt}"
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    client.force_login(outsider)
    assert client.get(url).status_code == 404
