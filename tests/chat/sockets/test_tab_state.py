"""TabState: what one tab has been sent of a streaming reply, per channel, by offset."""

from __future__ import annotations

from typing import Any

from django.utils.safestring import mark_safe

from chat.sockets import outbound
from chat.sockets.tab_state import TabState


def _streaming(tab: TabState, message_id: int = 7, text: int = 5, thinking: int = 0) -> None:
    tab.known.add(message_id)
    tab.streams[(message_id, "text")] = text
    tab.streams[(message_id, "thinking")] = thinking


def test_it_sends_only_the_part_of_a_delta_the_tab_lacks() -> None:
    tab = TabState()
    _streaming(tab, text=5)
    assert tab.apply_delta(7, "text", 0, "Hello") is None  # a repeat
    frame = tab.apply_delta(7, "text", 3, "lo, world")
    assert frame is not None and ">, world</span>" in frame
    assert tab.streams[(7, "text")] == 12


def test_it_waits_for_a_snapshot_to_fill_a_gap() -> None:
    tab = TabState()
    _streaming(tab, text=5)
    assert tab.apply_delta(7, "text", 9, "later") is None
    frame = tab.apply_snapshot(7, {"text": "Hello, world", "thinking": ""})
    assert frame is not None and 'id="msg-7-stream"' in frame and "Hello, world" in frame
    assert tab.apply_delta(7, "text", 12, "!") is not None


def test_it_tracks_thinking_apart_from_text() -> None:
    tab = TabState()
    _streaming(tab, text=0, thinking=0)
    thinking = tab.apply_delta(7, "thinking", 0, "Let me see")
    assert thinking is not None and "beforeend:#msg-7-thinking-text" in thinking
    assert tab.apply_delta(7, "thinking", 0, "Let me see") is None
    assert tab.streams == {(7, "text"): 0, (7, "thinking"): 10}


def test_it_ignores_deltas_for_a_reply_that_is_not_streaming_in_this_tab() -> None:
    tab = TabState()
    assert tab.apply_delta(7, "text", 0, "x") is None
    assert tab.apply_snapshot(7, {"text": "x", "thinking": ""}) is None
    assert tab.needs_refresh(7)


class _Pair:
    """Just what TabState and the card template read of a ToolPair."""

    def __init__(self, pk: int, message_id: int, block_index: int) -> None:
        self.pk, self.message_id, self.block_index = pk, message_id, block_index


def _stub_cards(monkeypatch: Any) -> None:
    """Render a tool card as ``<card pk>`` (the fake pairs here have no template fields)."""
    real = outbound._render

    def render(partial: str, **ctx: Any) -> str:
        if partial == "tool_card":
            return mark_safe(f"<card {ctx['pair'].pk}>")
        return real(partial, **ctx)

    monkeypatch.setattr(outbound, "_render", render)


def test_it_appends_a_card_stored_mid_stream_once_then_replaces_it(monkeypatch: Any) -> None:
    tab = TabState()
    _streaming(tab)
    assert tab.apply_tool_input(7, 1, "toolu_1", "calc", "{}") is not None
    _stub_cards(monkeypatch)
    pair = _Pair(40, 7, 1)
    first = tab._card(pair)  # type: ignore[arg-type]
    assert first == (
        '<div hx-swap-oob="beforeend:#msg-7-tools"><card 40></div>'
        '<div id="live-7-1" hx-swap-oob="delete"></div>'
    )
    assert tab._card(pair) == "<card 40>"  # type: ignore[arg-type]
    assert tab.apply_tool_input(7, 1, "toolu_1", "calc", "{}") is None  # a late input frame


def test_it_replaces_cards_of_replies_that_are_not_streaming(monkeypatch: Any) -> None:
    _stub_cards(monkeypatch)
    assert TabState()._card(_Pair(41, 9, 0)) == "<card 41>"  # type: ignore[arg-type]
