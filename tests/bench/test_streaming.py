"""Issue 2's benchmark: one long streamed reply, deltas in versus frames out, DB writes per reply.

Run with `make bench` or `.venv/bin/python -m pytest tests/bench/test_streaming.py -m slow -s`.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from chat import broadcast, engine
from chat import client as model_client
from chat.models import Message
from tests.bench.measure import count_writes, parse

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TOKENS_PER_SECOND = 100.0  # about the pace of a real model


async def test_it_reports_frames_and_writes_for_one_long_reply(
    connect: Any, owner: Any, conversation: Any
) -> None:
    model_client.simulator().tokens_per_second = TOKENS_PER_SECOND
    with count_writes() as writes:
        socket = await connect(owner, conversation.pk)
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
    deltas = [(t, text) for t, raw in received for m, text in parse(raw).deltas if m == reply.pk]
    snapshots = [(t, s) for t, raw in received for m, s in parse(raw).snapshots if m == reply.pk]
    streamed = ""
    for _, raw in received:
        frame = parse(raw)
        for m, text in frame.snapshots:
            if m == reply.pk:
                streamed = text  # the bubble as rendered (on append, or a snapshot frame)
        streamed += "".join(text for m, text in frame.deltas if m == reply.pk)
    first_delta = deltas[0][0] - sent
    stream_s = deltas[-1][0] - deltas[0][0]
    sizes = [len(text) for _, text in deltas]
    gaps = [b[0] - a[0] for a, b in zip(deltas, deltas[1:], strict=False)]
    reply_writes = sum(v for k, v in writes.by_table.items() if k.endswith("chat_message"))

    print(
        "\n== Issue 2: one streamed reply ('write a long answer', "
        f"simulator at {TOKENS_PER_SECOND:.0f} tokens/s) ==\n"
        f"reply: {len(reply.text)} chars, {reply.usage.get('output_tokens')} output tokens, "
        f"streamed over {stream_s:.2f} s\n"
        f"text deltas received from the SDK: {counters.deltas_in}\n"
        f"frames published to the group:    {counters.frames_out} "
        f"({len(deltas)} delta frames + {len(snapshots)} snapshot frames reached the socket)\n"
        f"deltas per frame: {counters.deltas_in / max(1, counters.frames_out):.1f}; "
        f"chars per delta frame: mean {sum(sizes) / len(sizes):.1f}, min {min(sizes)}, "
        f"max {max(sizes)}; mean gap between delta frames {1000 * sum(gaps) / max(1, len(gaps)):.1f} ms\n"
        f"first-delta latency (send -> first text frame at the socket): {first_delta * 1000:.1f} ms\n"
        f"socket frames during the turn: {len(received)} in all\n"
        f"DB writes for the whole turn (user message + reply): {writes.total} statements "
        f"({writes.report()})\n"
        f"of which on chat_message: {reply_writes}"
    )
    # Sanity, not targets: the text arrived whole, coalesced, and was not written per token.
    assert streamed == reply.text
    assert counters.frames_out < counters.deltas_in
    assert reply_writes < counters.deltas_in / 10
