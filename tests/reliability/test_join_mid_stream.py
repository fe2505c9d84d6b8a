"""A tab that joins mid-stream, on a loaded server, receives every token exactly once.

A real Tandem process (production settings, SQLite) streams from the relay benchmark's fake
Messages API (tests/bench/fake_api.py), whose tokens carry their own index, so a tab's text
tells exactly which tokens it got, how often and in what order. Twenty conversations stream at
once; in each, a second tab opens while the reply streams (each at another moment, from the
first delta to the last), syncs as a page does, and from then on must show the reply whole:
the text its first frame carried, then deltas and snapshots, each token once, in order, and
the finished reply complete. The tab that asked is held to the same rule.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.asyncio.client import ClientConnection, connect

from tests.bench.measure import parse
from tests.bench.relay_client import login, new_conversation
from tests.bench.relay_metrics import ReplyTrace, parse_tokens
from tests.bench.relay_servers import Process
from tests.e2e.server import LiveServer, free_port

STREAMS = 20
TOKENS = 60
TPS = 30.0
WAIT_S = 120.0
DONE = ("status-complete", "status-error", "status-interrupted")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    fake = Process("tests.bench.fake_api", free_port(), {}, tmp_path / "fake_api.log")
    live = LiveServer(
        tmp_path,
        extra_env={
            "ANTHROPIC_API_KEY": "tests-dummy-key",
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{fake.port}",
            "NO_PROXY": "127.0.0.1,localhost",
            "TANDEM_MAX_SOCKETS_PER_USER": "200",
            "TANDEM_RATE_LIMIT_PER_MINUTE": "1000",
            "TANDEM_SWEEP_INTERVAL_S": "2.0",
        },
    )
    fake.env = {k: v for k, v in live.env.items() if not k.startswith("ANTHROPIC_")}
    fake.start("--tps", str(TPS), "--tokens", str(TOKENS))
    try:
        live.manage("migrate", "--noinput")
        live.create_user("joiner", "joiner-pass-123")
        live.start()
        yield live
    finally:
        live.stop()
        fake.stop()


class Tab:
    """One socket on a conversation, tracing the first reply it sees."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.reply_id: int | None = None
        self.trace = ReplyTrace(sent_ns=0)
        self.at_join: int | None = None  # tokens in the first text the tab was sent
        self.deltas = asyncio.Event()  # the tab has shown some streamed text
        self.finished = asyncio.Event()

    async def read(self) -> None:
        async for raw in self.ws:
            self.frame(raw if isinstance(raw, str) else raw.decode())

    def frame(self, raw: str) -> None:
        frame = parse(raw)
        if self.reply_id is None:
            replies = [a.id for a in frame.articles if a.kind == "reply"]
            self.reply_id = replies[0] if replies else None
        for message_id, finished, open_text in frame.streams:
            if message_id == self.reply_id:
                if self.at_join is None:
                    self.at_join = len(parse_tokens(finished + open_text))
                self.trace.stream(finished, open_text, 0)
        for message_id, added, open_text in frame.markdown:
            if message_id == self.reply_id:
                self.trace.markdown(added, open_text, 0)
        if parse_tokens(self.trace.live):
            self.deltas.set()
        for article in frame.articles:
            if article.id == self.reply_id and f"status-{article.status}" in DONE:
                start = raw.find(f'<article id="msg-{article.id}"')
                self.trace.finished(raw[start:], 0)
                self.finished.set()


async def _open(server: LiveServer, cookie: str, conversation_id: int) -> Tab:
    ws = await connect(
        server.url.replace("http://", "ws://") + f"/ws/conversations/{conversation_id}/",
        origin=server.url,  # type: ignore[arg-type]
        additional_headers={"Cookie": cookie},
        open_timeout=WAIT_S,
        proxy=None,
        max_size=None,
    )
    tab = Tab(ws)
    asyncio.get_running_loop().create_task(tab.read())
    await ws.send(json.dumps({"type": "sync", "seq": 0, "rev": 0}))  # as the page does
    return tab


async def _conversation(server: LiveServer, cookie: str, number: int) -> tuple[Tab, Tab]:
    conversation_id = await new_conversation(server.url, cookie)
    asker = await _open(server, cookie, conversation_id)
    await asker.ws.send(json.dumps({"type": "send", "text": f"Stream {number}, please."}))
    await asker.deltas.wait()
    # Join at a different moment in each conversation, over the whole reply.
    await asyncio.sleep(number / STREAMS * TOKENS / TPS * 0.9)
    joiner = await _open(server, cookie, conversation_id)
    await asker.finished.wait()
    await joiner.finished.wait()
    for tab in (asker, joiner):
        await tab.ws.close()
    return asker, joiner


async def _run(server: LiveServer) -> list[tuple[Tab, Tab]]:
    cookie = await login(server.url, "joiner", "joiner-pass-123")
    async with asyncio.timeout(WAIT_S):
        return await asyncio.gather(*(_conversation(server, cookie, i) for i in range(STREAMS)))


def test_a_tab_joining_mid_stream_under_load_gets_every_token_exactly_once(
    server: LiveServer,
) -> None:
    results = asyncio.run(_run(server))
    for number, (asker, joiner) in enumerate(results):
        assert asker.trace.problems(TOKENS) == [], (number, "asker")
        assert joiner.trace.problems(TOKENS) == [], (number, "joiner", joiner.trace.live)
        assert joiner.reply_id == asker.reply_id
    # The joiners did join mid-stream: most were first sent part of the reply, then the rest.
    midway = [j.at_join for _, j in results if j.at_join and j.at_join < TOKENS]
    assert len(midway) >= STREAMS // 2, [j.at_join for _, j in results]
