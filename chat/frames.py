"""HTML fragments pushed over the WebSocket; htmx swaps them out of band by id.

Every piece of model or user text goes through Django's autoescaping or the Markdown
sanitizer (``chat.rendering``) before it reaches a frame.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.template.loader import render_to_string
from django.utils.html import format_html

from chat.models import ToolPair
from chat.thread_state import MessageView

TEMPLATE = "chat/conversation.html"


def _render(partial: str, **context: object) -> str:
    return render_to_string(f"{TEMPLATE}#{partial}", context)


def append_messages(views: Iterable[MessageView]) -> str:
    inner = "".join(_render("message", view=v) for v in views)
    return f'<div hx-swap-oob="beforeend:#thread">{inner}</div>' if inner else ""


def replace_message(view: MessageView) -> str:
    return _render("message", view=view, oob=True)


def replace_card(pair: ToolPair) -> str:
    return _render("tool_card", pair=pair, oob=True)


STREAM_TARGETS = {"text": "msg-{}-stream", "thinking": "msg-{}-thinking-text"}


def append_card(pair: ToolPair, *, remove_live: bool) -> str:
    """A tool call stored mid-stream: its card joins the reply, the live input card goes."""
    card = _render("tool_card", pair=pair)
    html = f'<div hx-swap-oob="beforeend:#msg-{pair.message_id}-tools">{card}</div>'
    if remove_live:
        html += format_html(
            '<div id="live-{}-{}" hx-swap-oob="delete"></div>', pair.message_id, pair.block_index
        )
    return html


def delta(message_id: int, channel: str, text: str) -> str:
    target = STREAM_TARGETS[channel].format(message_id)
    return format_html('<span hx-swap-oob="beforeend:#{}">{}</span>', target, text)


def replace_stream(message_id: int, channel: str, text: str) -> str:
    """The whole streamed text of one channel, replacing what the tab shows."""
    target = STREAM_TARGETS[channel].format(message_id)
    tag, css = ("span", "stream") if channel == "text" else ("div", "thinking-text")
    return format_html(
        '<{} id="{}" class="{}" hx-swap-oob="true">{}</{}>', tag, target, css, text, tag
    )


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


def cursor(seq: int, rev: int) -> str:
    return format_html(
        '<div id="sync-cursor" hidden hx-swap-oob="true" data-seq="{}" data-rev="{}"></div>',
        seq,
        rev,
    )


def error(text: str) -> str:
    return format_html(
        '<div id="composer-error" class="composer-error" role="alert" hx-swap-oob="true">{}</div>',
        text,
    )


def stored(ref: str) -> str:
    """The answer to a stored message: the error line cleared, naming the send it confirms."""
    return format_html(
        '<div id="composer-error" class="composer-error" role="alert" hx-swap-oob="true"'
        ' data-stored="{}"></div>',
        ref,
    )


def conversation_list(user_id: int, current: int | None) -> str:
    from chat import conversation_list as listing

    return render_to_string(
        "chat/_sidebar.html#list", {**listing.context(user_id, current), "oob": True}
    )


def title(text: str) -> str:
    return format_html(
        '<h1 id="conv-title" class="title" hx-swap-oob="true">{}</h1>', text or "New conversation"
    )
