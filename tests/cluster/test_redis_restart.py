"""Redis restarting under the scale-out stack (issue 11, item 4): open tabs resync, nothing lost.

The stack runs on a redis-server of this module's own (never the shared one), which the test
SIGKILLs mid-stream and starts again, empty, on the same port. The tabs' sockets stay open
throughout (they never reconnect: the harness's tabs cannot), so whatever they show after
the restart came through the groups their processes joined again.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator

import pytest
import redis

from tests.cluster.harness import Cluster, Tab, signed_in, visible_text
from tests.cluster.redis_server import RedisServer
from tests.cluster.test_across_processes import PAIR, newest_reply_words, tool_results

pytestmark = [pytest.mark.cluster, pytest.mark.postgres, pytest.mark.redis]

REPLY = (
    "SELECT id, status, content FROM chat_message WHERE conversation_id = %s"
    " AND kind = 'reply' ORDER BY seq"
)
WORDS = re.compile(r"[A-Za-z0-9]+")


@pytest.fixture(scope="module")
def own_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, own_redis: RedisServer) -> Iterator[Cluster]:
    stack = Cluster(
        tmp_path_factory.mktemp("cluster"),
        workers=1,
        redis_url=own_redis.url,
        # Slow enough that the reply is still streaming when Redis comes back; a sweep this
        # rare cannot be what starts the continuation within seconds: the doorbell must.
        extra_env={"SIMULATOR_TOKENS_PER_SECOND": "30", "TANDEM_SWEEP_INTERVAL_S": "30"},
    )
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()


def reply_text(content: list[dict[str, object]]) -> str:
    return " ".join(str(b.get("text", "")) for b in content if b.get("type") == "text")


def shown_exactly_once(tab: Tab, message_id: int, text: str) -> None:
    """The last frame touching the reply replaces it whole, finished, with its text once.

    Live text streams into ``#msg-ID-open`` (Markdown blocks); any later frame about the reply
    names it. So if the last one is the finished article, that article is what the tab shows."""
    anchor = f'id="msg-{message_id}"'
    last = next(raw for raw in reversed(tab.raw) if f"msg-{message_id}" in raw)
    assert anchor in last, "the last frame about the reply is not the whole reply"
    article = last[last.index(anchor) : last.index("</article>", last.index(anchor))]
    assert "status-complete" in article
    shown = " ".join(WORDS.findall(visible_text(article)))
    expected = " ".join(WORDS.findall(text))
    assert expected and shown.count(expected) == 1, (expected, shown)


async def first_frame_after(tabs: list[Tab], moment: float, within: float = 30.0) -> list[float]:
    """Seconds from ``moment`` (time.time()) to each tab's first frame after it."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        arrived = [next((w for w in tab.wall if w >= moment), None) for tab in tabs]
        if all(a is not None for a in arrived):
            return [a - moment for a in arrived if a is not None]
        await asyncio.sleep(0.05)
    raise AssertionError("a tab got nothing after Redis came back")


async def test_tabs_resync_after_a_redis_restart_and_the_conversation_goes_on(
    cluster: Cluster, own_redis: RedisServer
) -> None:
    cookie, conversation_id = await signed_in(cluster.url)
    one = await Tab(cluster.urls["web 1"], cookie, conversation_id).open()
    two = await Tab(cluster.urls["web 2"], cookie, conversation_id).open()
    tabs = [one, two]
    try:
        await one.send({"type": "send", "text": "write a long answer about tandem bicycles"})
        rows = cluster.wait_sql(REPLY, conversation_id, until=bool, within=30)
        reply_id = rows[0][0]
        for tab in tabs:  # live text reaches both tabs before the outage
            deadline = time.monotonic() + 30
            while not any(f"msg-{reply_id}-open" in raw for raw in tab.raw):
                assert time.monotonic() < deadline, "no live text before the outage"
                await asyncio.sleep(0.05)

        own_redis.kill()  # mid-stream: everything Redis held is gone
        await asyncio.sleep(1.0)
        own_redis.start()
        back = time.time()
        status = cluster.sql("SELECT status FROM chat_message WHERE id = %s", reply_id)[0][0]
        assert status == "streaming", "the reply finished during the outage: make it longer"

        caught_up = await first_frame_after(tabs, back)
        print(f"\nfirst frame after Redis came back: {[f'{s:.2f} s' for s in caught_up]}")
        done = cluster.wait_sql(
            "SELECT status, content FROM chat_message WHERE id = %s",
            reply_id,
            until=lambda r: r[0][0] != "streaming",
            within=120,
        )
        assert done[0][0] == "complete"  # the turn went on through the outage
        final = reply_text(done[0][1])
        last_word = WORDS.findall(final)[-1]
        for tab in tabs:
            await tab.wait_for(last_word, since=0.0)
            deadline = time.monotonic() + 15
            while "status-complete" not in next(
                (raw for raw in reversed(tab.raw) if f"msg-{reply_id}" in raw), ""
            ):
                assert time.monotonic() < deadline, "the finished reply never reached the tab"
                await asyncio.sleep(0.05)
            shown_exactly_once(tab, reply_id, final)
            assert not tab.closed  # the same socket all along

        # Every process (2 web, 1 worker) listens for cancels again.
        client = redis.Redis.from_url(own_redis.url)
        try:
            group = f"{cluster.name}:asgi:group:tandem-tools"
            deadline = time.monotonic() + 15
            while client.zcard(group) < 3:
                assert time.monotonic() < deadline, client.zrange(group, 0, -1)
                await asyncio.sleep(0.1)
        finally:
            client.close()

        # A new message streams live to both tabs.
        await two.send({"type": "send", "text": "write a long answer about tandem bicycles"})
        rows = cluster.wait_sql(REPLY, conversation_id, until=lambda r: len(r) >= 2, within=30)
        second = rows[1][0]
        for tab in tabs:
            deadline = time.monotonic() + 30
            while not any(f"msg-{second}-open" in raw for raw in tab.raw):
                assert time.monotonic() < deadline, "the new reply did not stream live"
                await asyncio.sleep(0.05)
        cluster.wait_sql(
            "SELECT status FROM chat_message WHERE id = %s",
            second,
            until=lambda r: r[0][0] != "streaming",
            within=120,
        )

        # A tool finishing on the worker wakes the continuation (the kick doorbell: the sweep
        # is 30 s here), and both tabs see it.
        await one.send({"type": "send", "text": "run the demo tool for 1 seconds"})
        pairs = cluster.wait_sql(
            PAIR, conversation_id, until=lambda r: bool(r) and r[0][1] == "succeeded", within=60
        )
        assert cluster.child_of(str(pairs[0][2])).startswith("worker")
        finished_at = "SELECT finished_at FROM chat_toolpair WHERE id = %s"
        finished = cluster.sql(finished_at, pairs[0][0])[0][0]
        results = cluster.wait_sql(
            "SELECT seq, created_at FROM chat_message WHERE conversation_id = %s"
            " AND kind = 'tool_results'",
            conversation_id,
            until=bool,
            within=20,
        )
        assert results, "the continuation never started"
        woke_after = (results[0][1] - finished).total_seconds()
        print(f"tool finished -> continuation started: {woke_after:.2f} s")
        assert woke_after < 10  # a doorbell, not the 30 s sweep
        words = newest_reply_words(cluster, conversation_id, int(results[0][0]))
        for tab in tabs:
            await tab.wait_for(words[-1], within=60)
            assert not tab.closed
        assert len(tool_results(cluster, conversation_id)) == 1
    finally:
        for tab in tabs:
            await tab.close()
