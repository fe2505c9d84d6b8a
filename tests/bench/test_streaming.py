"""Issue 2's benchmark: one long streamed reply, deltas in versus frames out, DB writes per reply.

Run with `make bench` or `.venv/bin/python -m pytest tests/bench/test_streaming.py -m slow -s`.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest

from chat.modelapi import client as model_client
from chat.models import Message
from chat.rendering import markdown_to_html
from chat.runtime import broadcast, engine
from tests.bench.measure import count_writes, parse, text_of

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TOKENS_PER_SECOND = 100.0  # about the pace of a real model


async def test_it_reports_frames_and_writes_for_one_long_reply(
    connect: Any, owner: Any, conversation: Any
) -> None:
    model_client.simulator().tokens_per_second = TOKENS_PER_SECOND
    socket = await connect(owner, conversation.pk)
    cold = await _first_delta_of_a_short_reply(socket)
    async with count_writes() as writes:
        sent = time.perf_counter()
        await socket.send_json_to({"type": "send", "text": "Please write a long answer about tea."})
        received: list[tuple[float, str]] = []
        while True:
            raw = await socket.receive_from(timeout=60)
            received.append((time.perf_counter(), raw))
            if "kind-reply status-complete" in raw:
                break
        await engine.idle()
    reply = await Message.objects.filter(conversation=conversation, kind="reply").alast()
    assert reply is not None and reply.status == Message.Status.COMPLETE

    counters = dict(broadcast.recent_counters)[reply.pk]
    deltas = [  # live Markdown frames: the text of the blocks added and of the open block
        (t, added + open_text)
        for t, raw in received
        for m, added, open_text in parse(raw).markdown
        if m == reply.pk
    ]
    snapshot_frames = sum(  # replace_stream frames (an appended bubble has a stream too)
        raw.startswith(f'<div id="msg-{reply.pk}-stream"') for _, raw in received
    )
    sizes = [len(text) for _, text in deltas]
    gaps_ms = [1000 * (b - a) for (a, _), (b, _) in itertools.pairwise(deltas)]
    message_writes = sum(v for k, v in writes.by_table.items() if k.endswith("chat_message"))

    print(
        f"\n== Issue 2: one streamed reply ('write a long answer', simulator at "
        f"{TOKENS_PER_SECOND:.0f} tokens/s) ==\n"
        f"reply: {len(reply.text)} chars, {reply.usage.get('output_tokens')} output tokens, "
        f"streamed over {deltas[-1][0] - deltas[0][0]:.2f} s\n"
        f"text deltas received from the SDK: {counters.deltas_in}\n"
        f"frames published to the group:    {counters.frames_out} "
        f"(the socket got {len(deltas)} delta frames and {snapshot_frames} snapshot frames)\n"
        f"deltas per frame: {counters.deltas_in / max(1, counters.frames_out):.1f}; "
        f"text chars per frame: mean {sum(sizes) / len(sizes):.1f}, min {min(sizes)}, "
        f"max {max(sizes)}; mean gap between delta frames "
        f"{sum(gaps_ms) / max(1, len(gaps_ms)):.1f} ms\n"
        f"first-delta latency (send -> first text frame at the socket): "
        f"{(deltas[0][0] - sent) * 1000:.1f} ms (the process's first reply, cold: "
        f"{cold * 1000:.1f} ms)\n"
        f"socket frames during the turn: {len(received)}\n"
        f"DB writes for the turn (storing the user message, then the reply): {writes.total} "
        f"statements ({writes.report()}); {message_writes} of them on chat_message"
    )
    # Sanity, not targets: the text arrived whole, coalesced, and was not written per token.
    assert _streamed_text(received, reply.pk) == text_of(markdown_to_html(reply.text))
    assert counters.frames_out < counters.deltas_in
    assert message_writes < counters.deltas_in / 10


def _streamed_text(received: list[tuple[float, str]], message_id: int) -> str:
    """The bubble's text as a tab would have built it from these frames."""
    finished = open_text = ""
    for _, raw in received:
        frame = parse(raw)
        for m, done, opened in frame.streams:
            if m == message_id:  # an appended bubble, or a snapshot replacing it
                finished, open_text = done, opened
        for m, added, opened in frame.markdown:
            if m == message_id:
                finished, open_text = finished + added, opened
    return finished + open_text


async def _first_delta_of_a_short_reply(socket: Any) -> float:
    """A short first reply warms up the client, templates and caches."""
    sent = time.perf_counter()
    await socket.send_json_to({"type": "send", "text": "Hello!"})
    first = None
    while True:
        raw = await socket.receive_from(timeout=30)
        if first is None and parse(raw).text_ids:
            first = time.perf_counter() - sent
        if "kind-reply status-complete" in raw:
            await engine.idle()
            assert first is not None
            return first
