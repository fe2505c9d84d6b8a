"""chat.sockets.outbound: every pushed fragment is a named partial of the conversation page."""

from __future__ import annotations

from typing import Any

import pytest
from django.template.loader import render_to_string
from django.test import Client
from django.utils.safestring import mark_safe
from hypothesis import given
from hypothesis import strategies as st

from chat.services import messages
from chat.sockets import outbound

HOSTILE = '<b>"x"\'&</b>'
ESCAPED = "&lt;b&gt;&quot;x&quot;&#x27;&amp;&lt;/b&gt;"


def test_it_pushes_a_thinking_delta_into_its_stream() -> None:
    assert outbound.delta(3, "thinking", HOSTILE) == (
        f'<span hx-swap-oob="beforeend:#msg-3-thinking-text">{ESCAPED}</span>'
    )


def test_it_pushes_markdown_blocks_before_the_open_block_and_replaces_that() -> None:
    assert outbound.markdown_frame(3, ["<p>a</p>", "<p>b</p>"], "<ul><li>c</li></ul>") == (
        '<div hx-swap-oob="beforebegin:#msg-3-open"><p>a</p><p>b</p></div>'
        '<div id="msg-3-open" class="stream-open" hx-swap-oob="true"><ul><li>c</li></ul></div>'
    )
    assert outbound.markdown_frame(3, [], "") == (
        '<div id="msg-3-open" class="stream-open" hx-swap-oob="true"></div>'
    )


@given(
    message_id=st.integers(min_value=1, max_value=10**12),
    blocks=st.lists(st.text(), max_size=4),
    open_html=st.text(),
)
def test_it_builds_a_markdown_frame_exactly_as_the_template_renders_it(
    message_id: int, blocks: list[str], open_html: str
) -> None:
    template = render_to_string(
        f"{outbound.TEMPLATE}#markdown_frame",
        {
            "message_id": message_id,
            "blocks": mark_safe("".join(blocks)),
            "open_html": mark_safe(open_html),
        },
    )
    assert outbound.markdown_frame(message_id, blocks, open_html) == template


@given(
    message_id=st.integers(min_value=1, max_value=10**12),
    channel=st.sampled_from(sorted(outbound.STREAM_TARGETS)),
    text=st.text(),
)
def test_it_builds_a_delta_exactly_as_the_template_renders_it(
    message_id: int, channel: str, text: str
) -> None:
    target = outbound.STREAM_TARGETS[channel].format(message_id)
    template = render_to_string(f"{outbound.TEMPLATE}#delta", {"target": target, "text": text})
    assert outbound.delta(message_id, channel, text) == template


@given(
    seq=st.integers(min_value=0, max_value=10**12), rev=st.integers(min_value=0, max_value=10**12)
)
def test_it_builds_the_cursor_exactly_as_the_template_renders_it(seq: int, rev: int) -> None:
    template = render_to_string(
        f"{outbound.TEMPLATE}#cursor", {"seq": seq, "rev": rev, "oob": True}
    )
    assert outbound.cursor(seq, rev) == template


@given(text=st.text())
def test_it_builds_the_title_exactly_as_the_template_renders_it(text: str) -> None:
    template = render_to_string(f"{outbound.TEMPLATE}#title", {"title": text, "oob": True})
    assert outbound.title(text) == template


@given(ref=st.text())
def test_it_builds_the_stored_confirmation_exactly_as_the_template_renders_it(ref: str) -> None:
    template = render_to_string(
        f"{outbound.TEMPLATE}#composer_error",
        {"error_text": "", "stored_ref": ref, "oob": True},
    )
    assert outbound.stored(ref) == template


def test_it_replaces_the_whole_stream_of_a_channel() -> None:
    assert outbound.replace_stream(3, "text", "**a** <b>\n\nsecond\n") == (
        '<div id="msg-3-stream" class="body markdown stream" hx-swap-oob="true">'
        "<p><strong>a</strong> &lt;b&gt;</p>\n"
        '<div id="msg-3-open" class="stream-open"><p>second</p>\n</div></div>'
    )
    assert outbound.replace_stream(3, "thinking", HOSTILE) == (
        f'<div id="msg-3-thinking-text" class="thinking-text" hx-swap-oob="true">{ESCAPED}</div>'
    )


def test_it_pushes_the_cursor_the_error_and_the_title() -> None:
    assert outbound.cursor(12, 340) == (
        '<div id="sync-cursor" hidden hx-swap-oob="true" data-seq="12" data-rev="340"></div>'
    )
    assert outbound.error(HOSTILE) == (
        f'<div id="composer-error" class="composer-error" role="alert" hx-swap-oob="true">'
        f"{ESCAPED}</div>"
    )
    assert outbound.title("") == (
        '<h1 id="conv-title" class="title" hx-swap-oob="true">New conversation</h1>'
    )
    assert ESCAPED in outbound.title(HOSTILE)


def test_it_sends_nothing_for_no_new_messages() -> None:
    assert outbound.append_messages([]) == ""


@pytest.mark.django_db
def test_it_renders_the_page_from_the_same_partials(owner: Any, conversation: Any) -> None:
    messages.post_user_message(conversation.pk, "hello")
    conversation.refresh_from_db()
    client = Client()
    client.force_login(owner)
    page = client.get(conversation.get_absolute_url()).content.decode()
    pushed = [
        outbound.title(conversation.title),
        outbound.cursor(1, conversation.rev),
        outbound.error(""),
    ]
    for fragment in pushed:
        assert fragment.replace(' hx-swap-oob="true"', "") in page
