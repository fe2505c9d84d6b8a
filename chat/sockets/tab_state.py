"""What one open tab has been sent, so every frame fills a gap and none repeats.

A tab reports its cursor (highest seq, highest rev) when its socket opens; from then on the
consumer keeps it: new messages are appended, changed ones replaced, and streamed text is
tracked by character offset so that deltas, snapshots and resyncs never double or drop text.
A reply's text streams as Markdown blocks (``chat.markdown_stream``): the tab also keeps how
many finished blocks it shows, so a frame appends exactly the ones it lacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from chat import markdown_stream
from chat.sockets import outbound
from chat.sockets.digest import Card, Digest


@dataclass
class TabState:
    seq: int = 0
    rev: int = 0
    synced: bool = False  # the page reported its cursor: before that, nothing can be placed
    # (message id, "text" | "thinking") -> characters delivered, for replies still streaming
    streams: dict[tuple[int, str], int] = field(default_factory=dict)
    blocks: dict[int, int] = field(default_factory=dict)  # message id -> finished blocks shown
    known: set[int] = field(default_factory=set)  # message ids the tab has
    live_tools: set[tuple[int, int]] = field(default_factory=set)  # (message id, block index)
    pairs: set[int] = field(default_factory=set)  # tool pair ids rendered in streaming replies
    stored_tools: set[tuple[int, int]] = field(default_factory=set)  # live cards now real cards

    def takes(self, start: Sequence[int], digest: Digest) -> bool:
        """Whether a doorbell's digest of the changes since ``start`` answers this tab: the
        tab is at that cursor, and no reply would go back to less text than the live frames
        brought it (a digest is built before the frames published while it travelled)."""
        if not self.synced or (self.seq, self.rev) != tuple(start):
            return False
        for view in digest.views:
            if view.streaming and view.id in self.known:
                if self.streams.get((view.id, "text"), 0) > view.text_chars:
                    return False
                if self.streams.get((view.id, "thinking"), 0) > view.thinking_chars:
                    return False
        return True

    def apply_changes(self, digest: Digest) -> list[str]:
        """The frame parts that bring the tab to the digest's cursor (``chat.sockets.digest``:
        rendered once for every tab at the cursor it starts from)."""
        out: list[str] = []
        if digest.new:
            out.append(digest.new)
        out.extend(html for _, html in digest.replaced)
        for view in digest.views:
            self.known.add(view.id)
            self.live_tools = {k for k in self.live_tools if k[0] != view.id}
            if view.streaming:
                self.pairs.update(view.pairs)
                self.streams[(view.id, "text")] = view.text_chars
                self.blocks[view.id] = view.text_blocks
                self.streams[(view.id, "thinking")] = view.thinking_chars
            else:
                self.streams.pop((view.id, "text"), None)
                self.streams.pop((view.id, "thinking"), None)
                self.blocks.pop(view.id, None)
        for card in digest.cards:
            out.append(self._card(card))
        if digest.rev > self.rev or not out:
            out.append(outbound.title(digest.title))
        self.seq = max(self.seq, digest.seq)
        self.rev = max(self.rev, digest.rev)
        out.append(outbound.cursor(self.seq, self.rev))
        return out

    def _card(self, card: Card) -> str:
        """A card for a call stored while its reply streams is new here: append it where the
        live card of its input was. Any other card the tab already shows: replace it."""
        streaming = (card.message_id, "text") in self.streams
        if not streaming or card.pk in self.pairs:
            return card.replace
        self.pairs.add(card.pk)
        live = (card.message_id, card.block_index)
        had_live_card = live in self.live_tools
        self.live_tools.discard(live)
        self.stored_tools.add(live)
        return outbound.append_card(
            card.html, card.message_id, card.block_index, remove_live=had_live_card
        )

    def apply_delta(self, message_id: int, channel: str, offset: int, text: str) -> str | None:
        """The part of a delta the tab lacks; None if it has it, or cannot place it yet."""
        delivered = self.streams.get((message_id, channel))
        if delivered is None or channel not in outbound.STREAM_TARGETS:
            return None
        end = offset + len(text)
        if end <= delivered or offset > delivered:
            return None  # a repeat, or a gap that the next snapshot fills
        self.streams[(message_id, channel)] = end
        return outbound.delta(message_id, channel, text[delivered - offset :])

    def _shows_text(self, message_id: int, text: str) -> None:
        """The tab was sent the whole streamed text, rendered as ``markdown_stream.render``."""
        self.streams[(message_id, "text")] = len(text)
        self.blocks[message_id] = len(markdown_stream.render(text).blocks)

    def apply_markdown(
        self, message_id: int, first: int, blocks: list[str], open_html: str, chars: int
    ) -> str | None:
        """Markdown blocks ``first``.. finished, and the open block, of a reply's first
        ``chars`` characters: the blocks the tab lacks and the open block, or None if the tab
        has all of it or cannot place it (a gap the next snapshot fills)."""
        delivered = self.streams.get((message_id, "text"))
        shown = self.blocks.get(message_id)
        if delivered is None or shown is None or chars <= delivered:
            return None
        if not first <= shown <= first + len(blocks):
            return None
        self.streams[(message_id, "text")] = chars
        self.blocks[message_id] = first + len(blocks)
        return outbound.markdown_frame(message_id, blocks[shown - first :], open_html)

    def apply_snapshot(self, message_id: int, texts: dict[str, str]) -> str | None:
        out = []
        for channel, text in texts.items():
            delivered = self.streams.get((message_id, channel))
            if delivered is None or len(text) <= delivered:
                continue
            if channel == "text":
                self._shows_text(message_id, text)
            else:
                self.streams[(message_id, channel)] = len(text)
            out.append(outbound.replace_stream(message_id, channel, text))
        return "".join(out) or None

    def apply_tool_input(
        self, message_id: int, index: int, tool_use_id: str, name: str, snapshot: str
    ) -> str | None:
        if (message_id, "text") not in self.streams:
            return None
        key = (message_id, index)
        if key in self.stored_tools:
            return None  # a late frame of input that is already a stored call's card
        new = key not in self.live_tools
        self.live_tools.add(key)
        return outbound.tool_input(message_id, index, tool_use_id, name, snapshot, new=new)

    def needs_refresh(self, message_id: int) -> bool:
        """A delta for a message this tab has never seen: its doorbell is late."""
        return message_id not in self.known
