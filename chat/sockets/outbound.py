"""HTML fragments pushed over the WebSocket; htmx swaps them out of band by id.

Each fragment is a named partial of the conversation template (``{% partialdef %}``), the same
markup the first page load renders, so a push, a resync and a reload cannot disagree. Every
piece of model or user text goes through Django's autoescaping or the Markdown sanitizer
(``chat.rendering``) before it reaches a frame.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

from django.template.loader import render_to_string
from django.utils.html import escape
from django.utils.safestring import mark_safe

from chat.models import ToolPair
from chat.queries import sidebar
from chat.queries.thread import MessageView

TEMPLATE = "chat/conversation.html"


def _render(partial: str, **context: object) -> str:
    return render_to_string(f"{TEMPLATE}#{partial}", context)


def append_messages(views: Iterable[MessageView]) -> str:
    views = list(views)
    return _render("new_messages", views=views) if views else ""


def replace_message(view: MessageView) -> str:
    return _render("message", view=view, oob=True)


def replace_card(pair: ToolPair) -> str:
    return _render("tool_card", pair=pair, oob=True)


def card(pair: ToolPair) -> str:
    return _render("tool_card", pair=pair)


STREAM_TARGETS = {"thinking": "msg-{}-thinking-text"}  # text streams as Markdown frames
STREAM_PARTIALS = {"text": "stream_text", "thinking": "thinking_text"}


def append_card(rendered_card: str, message_id: int, index: int, *, remove_live: bool) -> str:
    """A tool call stored mid-stream: its card joins the reply, the live input card goes.
    ``rendered_card`` must be what ``card`` returned (rendered once for every tab, escaped by
    its template): it is inserted as it is."""
    return _render(
        "new_card",
        card=mark_safe(rendered_card),  # noqa: S308 -- ``card``'s output, escaped by its template
        message_id=message_id,
        index=index,
        remove_live=remove_live,
    )


def markdown_frame(message_id: int, blocks: Sequence[str], open_html: str) -> str:
    """Finished Markdown blocks go before the open block, which is replaced. Both come
    sanitized from ``chat.markdown_stream`` (rendered once for every tab of the group).

    The ``markdown_frame`` partial, built without the template engine because it is on the
    per-frame path, and memoised so the tabs of a conversation that follow along (and so lack
    the same blocks) build a frame once; tests/chat/sockets/test_outbound.py checks it against
    the template for any input."""
    return _markdown_frame(message_id, tuple(blocks), open_html)


@lru_cache(maxsize=256)
def _markdown_frame(message_id: int, blocks: tuple[str, ...], open_html: str) -> str:
    added = "".join(blocks)
    before = f'<div hx-swap-oob="beforebegin:#msg-{message_id}-open">{added}</div>' if added else ""
    return (
        f'{before}<div id="msg-{message_id}-open" class="stream-open" hx-swap-oob="true">'
        f"{open_html}</div>"
    )


@lru_cache(maxsize=1024)
def delta(message_id: int, channel: str, text: str) -> str:
    """The ``delta`` partial, built without the template engine: it is on the per-token path.

    Memoised, so the tabs of one conversation in this process render a delta once (every tab
    that follows along gets the same text). tests/chat/sockets/test_outbound.py checks it
    against the template for any text.
    """
    target = STREAM_TARGETS[channel].format(message_id)
    return f'<span hx-swap-oob="beforeend:#{target}">{escape(text)}</span>'


def replace_stream(message_id: int, channel: str, text: str) -> str:
    """The whole streamed text of one channel, replacing what the tab shows."""
    return _render(STREAM_PARTIALS[channel], message_id=message_id, text=text, oob=True)


def tool_input(
    message_id: int, index: int, tool_use_id: str, name: str, snapshot: str, *, new: bool
) -> str:
    return _render(
        "live_tool",
        new=new,
        message_id=message_id,
        index=index,
        tool_use_id=tool_use_id,
        name=name,
        snapshot=snapshot,
    )


def progress(pair_id: int, fraction: float | None, text: str) -> str:
    return _render("progress", pair_id=pair_id, fraction=fraction, text=text, oob=True)


# The cursor, the title and the send's confirmation go to a tab with every doorbell or send:
# the partials ``cursor``, ``title`` and ``composer_error``, built without the template engine
# as ``delta`` is; tests/chat/sockets/test_outbound.py checks each against the template.


def cursor(seq: int, rev: int) -> str:
    return (
        f'<div id="sync-cursor" hidden hx-swap-oob="true" data-seq="{int(seq)}" '
        f'data-rev="{int(rev)}"></div>'
    )


def error(text: str) -> str:
    return _render("composer_error", error_text=text, oob=True)


def stored(ref: str) -> str:
    """The answer to a stored message: the error line cleared, naming the send it confirms."""
    return (
        '<div id="composer-error" class="composer-error" role="alert" hx-swap-oob="true" '
        f'data-stored="{escape(ref)}"></div>'
    )


def conversation_list(user_id: int, current: int | None) -> str:
    return render_to_string(
        "chat/_sidebar.html#list", {**sidebar.context(user_id, current), "oob": True}
    )


def title(text: str) -> str:
    shown = escape(text) if text else "New conversation"
    return f'<h1 id="conv-title" class="title" hx-swap-oob="true">{shown}</h1>'
