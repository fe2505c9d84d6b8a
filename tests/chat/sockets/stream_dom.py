"""What a tab shows of a streaming reply, rebuilt from the frames it was sent.

The frames are htmx out-of-band swaps of three shapes (``templates/chat/conversation.html``):
the whole stream element (a new or replaced message, a snapshot), a Markdown frame (blocks
inserted before the open block, the open block replaced) and, at the end, the finished
message. Markdown output never holds a ``<div>`` (not in the allow-list), so the first
``</div>`` after a piece of Markdown ends it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STREAM_FRAME = 'class="stream-open" hx-swap-oob="true"'  # a live Markdown frame


@dataclass
class StreamDom:
    message_id: int
    blocks: str = ""  # the finished blocks, as the tab holds them
    open: str = ""  # the open block
    final: str | None = None  # the finished message's Markdown, once it came
    streamed_last: str | None = None  # what the stream showed right before that
    streaming: bool = False

    @property
    def html(self) -> str:
        return self.blocks + self.open

    def apply(self, frame: str) -> None:
        n = self.message_id
        whole = re.search(
            rf'<div id="msg-{n}-stream" class="body markdown stream"[^>]*>(.*?)'
            rf'<div id="msg-{n}-open" class="stream-open">(.*?)</div></div>',
            frame,
            re.S,
        )
        if whole:
            self.blocks, self.open, self.streaming = whole.group(1), whole.group(2), True
        added = re.search(rf'<div hx-swap-oob="beforebegin:#msg-{n}-open">(.*?)</div>', frame, re.S)
        if added:
            assert self.streaming, "blocks for a stream the tab does not show"
            self.blocks += added.group(1)
        replaced = re.search(
            rf'<div id="msg-{n}-open" class="stream-open" hx-swap-oob="true">(.*?)</div>',
            frame,
            re.S,
        )
        if replaced:
            assert self.streaming, "an open block for a stream the tab does not show"
            self.open = replaced.group(1)
        done = re.search(
            rf'<article id="msg-{n}" class="msg role-assistant kind-reply status-(?!streaming)'
            rf'.*?<div class="body markdown">(.*?)</div>',
            frame,
            re.S,
        )
        if done:
            self.streamed_last = self.html if self.streaming else None
            self.final, self.streaming = done.group(1), False
