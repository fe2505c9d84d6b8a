"""Issue 14's benchmark: a 5,000-word Markdown reply streamed to a socket, frames and bytes.

Run with `make bench` or
`.venv/bin/python -m pytest tests/bench/test_markdown_stream.py -m slow -s`.
The measurement reads only the raw frames a socket receives, whatever their shape, so the same
file run on a tree without Markdown streaming measures plain-text streaming the same way.
"""

from __future__ import annotations

import random
import re
import time
from typing import Any

import pytest

from chat.modelapi import client as model_client
from chat.models import Message
from chat.runtime import engine

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TOKENS_PER_SECOND = 400.0  # faster than a real model, so the run takes about half a minute
WORDS = 5000
_WORDS = ("tea", "water", "leaf", "steep", "cup", "pot", "green", "black", "oolong", "aroma")


def long_markdown(words: int, seed: int = 14) -> str:
    """About ``words`` words of Markdown: headings, paragraphs, lists, code and tables."""
    rng = random.Random(seed)
    parts: list[str] = []
    count = 0
    while count < words:
        kind = rng.choice(["p", "p", "p", "list", "code", "table", "h"])
        if kind == "h":
            text = f"## {' '.join(rng.choices(_WORDS, k=3)).title()}"
        elif kind == "list":
            text = "\n".join(
                f"- **{rng.choice(_WORDS)}** {' '.join(rng.choices(_WORDS, k=6))}" for _ in range(4)
            )
        elif kind == "code":
            lines = [
                f"steep({rng.choice(_WORDS)!r}, minutes={rng.randint(1, 5)})" for _ in range(5)
            ]
            text = "```python\n" + "\n".join(lines) + "\n```"
        elif kind == "table":
            rows = [
                f"| {rng.choice(_WORDS)} | {rng.randint(60, 100)} | {rng.randint(1, 5)} |"
                for _ in range(4)
            ]
            text = "| tea | °C | min |\n|---|---:|---:|\n" + "\n".join(rows)
        else:
            sentence = " ".join(rng.choices(_WORDS, k=60))
            text = f"{sentence.capitalize()} with `code` and *emphasis*."
        parts.append(text)
        count += len(text.split())
    return "\n\n".join(parts)


_LIVE = re.compile(r'beforeend:#msg-\d+-stream"|class="stream-open" hx-swap-oob="true"')
_WHOLE = re.compile(r'^<(?:span|div) id="msg-\d+-stream"')


async def test_it_reports_frames_and_bytes_of_a_long_markdown_reply(
    connect: Any, owner: Any, conversation: Any, settings: Any
) -> None:
    text = long_markdown(WORDS)
    settings.TANDEM_MAX_MESSAGE_CHARS = 10 * len(text)
    settings.ANTHROPIC_MAX_TOKENS = 64_000
    model_client.simulator().tokens_per_second = TOKENS_PER_SECOND
    socket = await connect(owner, conversation.pk)
    started, cpu = time.perf_counter(), time.process_time()
    await socket.send_json_to({"type": "send", "text": f"reply with exactly: {text}"})
    received: list[str] = []
    while True:
        raw = await socket.receive_from(timeout=120)
        received.append(raw)
        if "kind-reply status-complete" in raw:
            break
    await engine.idle()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    reply = await Message.objects.filter(conversation=conversation, kind="reply").alast()
    assert reply is not None and reply.status == Message.Status.COMPLETE
    assert reply.text == text

    live = [raw for raw in received if _LIVE.search(raw)]
    whole = [raw for raw in received if _WHOLE.match(raw)]
    size = sum(len(raw.encode()) for raw in received)
    live_bytes = sum(len(raw.encode()) for raw in live)
    print(
        f"\n== Issue 14: a {len(text.split())}-word Markdown reply ({len(text)} chars, "
        f"{reply.usage.get('output_tokens')} output tokens) at {TOKENS_PER_SECOND:.0f} "
        f"tokens/s ==\n"
        f"frames to the socket: {len(received)} in all, {len(live)} live text frames, "
        f"{len(whole)} whole-stream (snapshot) frames\n"
        f"bytes to the socket: {size} in all, {live_bytes} in live text frames "
        f"(mean {live_bytes / max(1, len(live)):.0f}, max "
        f"{max((len(r.encode()) for r in live), default=0)} per frame), "
        f"{sum(len(r.encode()) for r in whole)} in snapshot frames\n"
        f"wall time {elapsed:.1f} s, process CPU {cpu:.2f} s"
    )
    assert live  # the reply arrived in pieces
