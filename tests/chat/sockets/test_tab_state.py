"""TabState: what one tab has been sent of a streaming reply, per channel, by offset."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from chat import markdown_stream
from chat.markdown_stream import Progress, render
from chat.rendering import markdown_to_html
from chat.sockets import outbound
from chat.sockets.digest import Card, Digest, View
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


def _card(pk: int, message_id: int, block_index: int) -> Card:
    return Card(pk, message_id, block_index, f"<card {pk} oob>", f"<card {pk}>")


def test_it_appends_a_card_stored_mid_stream_once_then_replaces_it() -> None:
    tab = TabState()
    _streaming(tab)
    assert tab.apply_tool_input(7, 1, "toolu_1", "calc", "{}") is not None
    card = _card(40, 7, 1)
    first = tab._card(card)
    assert first == (
        '<div hx-swap-oob="beforeend:#msg-7-tools"><card 40></div>'
        '<div id="live-7-1" hx-swap-oob="delete"></div>'
    )
    assert tab._card(card) == "<card 40 oob>"
    assert tab.apply_tool_input(7, 1, "toolu_1", "calc", "{}") is None  # a late input frame


def test_it_replaces_cards_of_replies_that_are_not_streaming() -> None:
    assert TabState()._card(_card(41, 9, 0)) == "<card 41 oob>"


def _digest(*views: View, seq: int = 3, rev: int = 5) -> Digest:
    return Digest("T", rev, seq, "<new>", (), views, ())


def test_a_carried_change_answers_only_a_synced_tab_at_its_start() -> None:
    tab = TabState(seq=2, rev=4)
    change = _digest(View(8, True, 0, 0, 0, ()))
    assert not tab.takes((2, 4), change)  # the page has not reported its cursor yet
    tab.synced = True
    assert not tab.takes((2, 3), change) and not tab.takes((1, 4), change)
    assert tab.takes([2, 4], change)  # (as a list, from Redis)
    parts = tab.apply_changes(change)
    assert parts[0] == "<new>" and (tab.seq, tab.rev) == (3, 5)
    assert tab.streams == {(8, "text"): 0, (8, "thinking"): 0} and tab.blocks == {8: 0}


def test_a_carried_change_never_takes_a_reply_back_to_less_text_than_the_tab_shows() -> None:
    """A digest is built before the frames published while it travelled: a tab whose frames
    went further reads instead."""
    tab = TabState(seq=2, rev=4, synced=True)
    _streaming(tab, message_id=7, text=20, thinking=5)
    assert not tab.takes((2, 4), _digest(View(7, True, 12, 1, 5, ())))
    assert not tab.takes((2, 4), _digest(View(7, True, 20, 1, 4, ())))
    assert tab.takes((2, 4), _digest(View(7, True, 20, 2, 5, ())))
    assert tab.takes((2, 4), _digest(View(7, False, 0, 0, 0, ())))  # finished: all of it
