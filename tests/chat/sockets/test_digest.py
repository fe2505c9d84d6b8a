"""chat.sockets.digest: changes rendered once, as plain data that survives any channel layer."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from channels.db import database_sync_to_async as db
from channels_redis.serializers import registry
from django.utils.safestring import SafeString, mark_safe
from hypothesis import given
from hypothesis import strategies as st

from chat.markdown_stream import render
from chat.models import Message, ToolPair
from chat.queries import thread
from chat.runtime import engine
from chat.sockets import digest
from chat.sockets.digest import Card, Digest, View

ids = st.integers(min_value=1, max_value=2**31)
html = st.text(max_size=30)
views = st.builds(View, ids, st.booleans(), ids, ids, ids, st.lists(ids, max_size=3).map(tuple))
cards = st.builds(Card, ids, ids, st.integers(0, 9), html, html)
digests = st.builds(
    Digest,
    html,
    ids,
    ids,
    html,
    st.lists(st.tuples(ids, html), max_size=3).map(tuple),
    st.lists(views, max_size=3).map(tuple),
    st.lists(cards, max_size=3).map(tuple),
)


@given(digests)
def test_a_digest_arrives_whole_through_redis_json_or_the_in_memory_layer(found: Digest) -> None:
    msgpack = registry.get_serializer("msgpack")
    bell = {"type": "conv.changed", "start": (3, 4), "digest": found}
    over_redis = msgpack.deserialize(msgpack.serialize(bell))
    assert isinstance(over_redis["digest"], list)  # tuples travel as lists
    for wire in (over_redis["digest"], json.loads(json.dumps(found)), copy.deepcopy(found)):
        assert digest.from_wire(wire) == found


def test_fragments_are_plain_strings_shared_by_every_copy() -> None:
    plain = digest._plain(mark_safe("<p>x</p>"))
    assert type(plain) is str and plain == "<p>x</p>"
    assert isinstance(mark_safe("<p>x</p>"), SafeString)


@pytest.mark.django_db(transaction=True)
async def test_it_keeps_what_a_tab_needs_of_a_streaming_reply_and_its_cards(
    conversation: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompt = await Message.objects.acreate(
        conversation=conversation, seq=1, role="user", kind="prompt", content=[]
    )
    reply = await Message.objects.acreate(
        conversation=conversation,
        seq=2,
        role="assistant",
        kind="reply",
        status=Message.Status.STREAMING,
        content=[],
    )
    pair = await ToolPair.objects.acreate(
        conversation=conversation,
        message=reply,
        block_index=1,
        tool_use_id="toolu_1",
        tool_name="calculate",
        input={"expression": "6*7"},
    )
    await type(conversation).objects.filter(pk=conversation.pk).aupdate(next_seq=3)
    live = "# Title\n\nFirst paragraph.\n\nStill <b>open"

    class Live:
        text, thinking = live, "hmm"

    monkeypatch.setattr(
        engine, "live_reply", lambda message_id: Live if message_id == reply.pk else None
    )
    changes = await db(thread.changes_since)(conversation.pk, 0, 0)
    found = digest.build(changes)
    assert found.seq == 2 and found.replaced == ()
    assert [v.id for v in found.views] == [prompt.pk, reply.pk]
    assert found.views[0] == View(prompt.pk, False, 0, 0, 0, ())
    assert found.views[1] == View(
        reply.pk, True, len(live), len(render(live).blocks), 3, (pair.pk,)
    )
    assert "<b>open" not in found.new and "First paragraph." in found.new  # sanitized Markdown
    assert all(type(part) is str for part in (found.new, found.title))

    # The card, changed later, of a message the tab has: both forms, rendered once.
    await ToolPair.objects.filter(pk=pair.pk).aupdate(rev=99)
    await type(conversation).objects.filter(pk=conversation.pk).aupdate(rev=99)
    later = digest.build(await db(thread.changes_since)(conversation.pk, 2, 50))
    (card,) = later.cards
    assert (card.pk, card.message_id, card.block_index) == (pair.pk, reply.pk, 1)
    assert 'hx-swap-oob="true"' in card.replace and "hx-swap-oob" not in card.html
    assert f'id="pair-{pair.pk}"' in card.html
