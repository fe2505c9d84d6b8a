"""TabState: what one tab has been sent of a streaming reply, per channel, by offset."""

from __future__ import annotations

from typing import Any

from django.utils.safestring import mark_safe
from hypothesis import given, settings
from hypothesis import strategies as st

from chat import markdown_stream
from chat.markdown_stream import Progress, render
from chat.rendering import markdown_to_html
from chat.sockets import outbound
from chat.sockets.tab_state import TabState
from tests.chat.sockets.stream_dom import StreamDom
from tests.chat.test_markdown_stream import markdownish


def _streaming(tab: TabState, message_id: int = 7, text: int = 5, thinking: int = 0) -> None:
    tab.known.add(message_id)
    tab.streams[(message_id, "text")] = text
    tab.blocks[message_id] = 0
    tab.streams[(message_id, "thinking")] = thinking


def test_it_sends_only_the_part_of_a_delta_the_tab_lacks() -> None:
    tab = TabState()
    _streaming(tab, thinking=5)
    assert tab.apply_delta(7, "thinking", 0, "Hello") is None  # a repeat
    frame = tab.apply_delta(7, "thinking", 3, "lo, world")
    assert frame is not None and ">, world</span>" in frame
    assert tab.streams[(7, "thinking")] == 12


def test_it_sends_only_the_markdown_blocks_the_tab_lacks() -> None:
    tab = TabState()
    _streaming(tab, text=0)
    frame = tab.apply_markdown(7, 0, ["<p>a</p>", "<p>b</p>"], "<p>c</p>", chars=9)
    assert frame == (
        '<div hx-swap-oob="beforebegin:#msg-7-open"><p>a</p><p>b</p></div>'
        '<div id="msg-7-open" class="stream-open" hx-swap-oob="true"><p>c</p></div>'
    )
    assert tab.apply_markdown(7, 0, ["<p>a</p>", "<p>b</p>"], "<p>c</p>", chars=9) is None
    again = tab.apply_markdown(7, 1, ["<p>b</p>", "<p>c</p>"], "<p>d</p>", chars=12)
    assert again is not None and again.startswith('<div hx-swap-oob="beforebegin:#msg-7-open"><p>c')
    assert (tab.streams[(7, "text")], tab.blocks[7]) == (12, 3)


def test_it_waits_for_a_snapshot_to_fill_a_gap() -> None:
    tab = TabState()
    _streaming(tab, text=0)
    assert tab.apply_markdown(7, 1, ["<p>b</p>"], "", chars=30) is None  # block 0 was missed
    frame = tab.apply_snapshot(7, {"text": "Hello\n\nworld\n", "thinking": ""})
    assert frame is not None and 'id="msg-7-stream"' in frame
    assert "<p>Hello</p>" in frame and '<div id="msg-7-open" class="stream-open"><p>world' in frame
    assert (tab.streams[(7, "text")], tab.blocks[7]) == (13, 1)
    assert tab.apply_markdown(7, 1, [], "<p>world!</p>", chars=14) is not None


def test_it_tracks_thinking_apart_from_text() -> None:
    tab = TabState()
    _streaming(tab, text=0, thinking=0)
    thinking = tab.apply_delta(7, "thinking", 0, "Let me see")
    assert thinking is not None and "beforeend:#msg-7-thinking-text" in thinking
    assert tab.apply_delta(7, "thinking", 0, "Let me see") is None
    assert tab.streams == {(7, "text"): 0, (7, "thinking"): 10}


# --- a tab fed by the broadcaster's frames, some lost, with snapshots and resyncs ------------

EVENTS = st.sampled_from(["deliver", "deliver", "deliver", "drop", "snapshot", "resync"])


@settings(max_examples=200, deadline=None)
@given(
    markdownish,
    st.lists(st.tuples(st.integers(min_value=1, max_value=40), EVENTS), max_size=25),
)
def test_whatever_is_lost_or_resynced_the_tab_never_doubles_or_drops_a_block(
    text: str, plan: list[tuple[int, str]]
) -> None:
    """The broadcaster's frames (``markdown_stream.step`` per flush, as in
    chat.runtime.broadcast), delivered, lost, or with a snapshot or a resync in between (a
    resync renders the live text, which may be ahead of the frames)."""
    tab = TabState()
    tab.known.add(7)
    tab.streams[(7, "text")] = 0
    tab.blocks[7] = 0
    dom = StreamDom(7, streaming=True)
    progress, sent = Progress(), 0
    final = render(text)
    for size, event in [*plan, (len(text), "snapshot")]:
        if event == "resync":  # the tab reconnects: the page renders the live text
            live = text[: min(len(text), sent + size)]
            tab._shows_text(7, live)
            dom.apply(outbound.replace_stream(7, "text", live))
            continue
        sent = min(len(text), sent + size)
        step = markdown_stream.step(text[:sent], progress)
        first, progress = progress.blocks, step.progress
        if event in ("deliver", "snapshot"):
            frame = tab.apply_markdown(7, first, list(step.new_blocks), step.open_html, sent)
            dom.apply(frame or "")
        if event == "snapshot":
            dom.apply(tab.apply_snapshot(7, {"text": text[:sent]}) or "")
        assert final.finished_html.startswith(dom.blocks)  # no block doubled, none out of order
        assert dom.html == render(text[: tab.streams[(7, "text")]]).html
    assert dom.html == final.html == markdown_to_html(text)


def test_it_ignores_deltas_for_a_reply_that_is_not_streaming_in_this_tab() -> None:
    tab = TabState()
    assert tab.apply_delta(7, "text", 0, "x") is None
    assert tab.apply_markdown(7, 0, [], "<p>x</p>", chars=1) is None
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
