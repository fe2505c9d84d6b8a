"""The channel layer that lives through a Redis restart (chat.runtime.redis_layer), on a
redis-server of the test's own that it SIGKILLs and starts again on the same port."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redis.exceptions import ConnectionError as RedisConnectionError

from chat.runtime.redis_layer import REJOINED, RejoiningRedisChannelLayer, ServerWatch
from tests.cluster.redis_server import RedisServer

looks = st.lists(st.one_of(st.none(), st.sampled_from([("a",), ("b",), ("a", "b")])))


def test_the_first_answer_is_the_baseline() -> None:
    watch = ServerWatch()
    assert not watch.observe(("a",))
    assert not watch.observe(("a",))


def test_back_after_failing_or_with_another_run_id() -> None:
    watch = ServerWatch()
    watch.observe(("a",))
    assert not watch.observe(None)
    assert watch.observe(("a",))  # came back (a restart that kept its run id is impossible,
    assert watch.observe(("b",))  # but a failure alone is enough); restarted between looks
    assert not watch.observe(("b",))


@given(looks)
def test_rejoins_exactly_when_the_servers_changed_or_had_failed(
    seen: list[tuple[str, ...] | None],
) -> None:
    watch = ServerWatch()
    known: tuple[str, ...] | None = None
    lost = False
    for look in seen:
        back = watch.observe(look)
        if look is None:
            assert not back
            lost = True
            continue
        assert back == (lost or (known is not None and look != known))
        known, lost = look, False


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    own = RedisServer(tmp_path / "redis")
    own.start()
    try:
        yield own
    finally:
        own.stop()


def layer_on(server: RedisServer) -> RejoiningRedisChannelLayer:
    return RejoiningRedisChannelLayer(
        hosts=[{"address": server.url, "socket_timeout": 15}],
        prefix="test-layer",
        watch_interval=0.1,
    )


async def send_again(
    layer: RejoiningRedisChannelLayer, group: str, message: dict[str, str]
) -> None:
    """A pooled connection from before the restart fails once (a sender loses one doorbell)."""
    try:
        await layer.group_send(group, message)
    except RedisConnectionError:
        await layer.group_send(group, message)


@pytest.mark.redis
async def test_groups_are_joined_again_and_channels_told_after_a_restart(
    server: RedisServer,
) -> None:
    layer = layer_on(server)
    try:
        socket = await layer.new_channel()
        left = await layer.new_channel()
        await layer.group_add("conv-1", socket)
        await layer.group_add("account-1", socket)
        await layer.group_add("conv-1", left)
        await layer.group_discard("conv-1", left)
        assert layer.members == {socket: {"conv-1", "account-1"}}
        received: asyncio.Queue[dict[str, object]] = asyncio.Queue()

        async def follow() -> None:  # a socket's receive loop: it must not end on the outage
            while True:
                await received.put(await layer.receive(socket))

        reader = asyncio.create_task(follow())
        await layer.group_send("conv-1", {"type": "conv.changed"})
        assert (await asyncio.wait_for(received.get(), 10))["type"] == "conv.changed"
        before = server.run_id()

        server.kill()
        await asyncio.sleep(0.5)  # the receive fails meanwhile, and tries again
        server.start()
        assert server.run_id() != before

        message = await asyncio.wait_for(received.get(), 15)
        assert message == {"type": REJOINED}
        assert layer.rejoins == 1
        for group in ("conv-1", "account-1"):  # the groups hold the socket again
            await send_again(layer, group, {"type": "ping", "group": group})
            assert (await asyncio.wait_for(received.get(), 10))["group"] == group
        assert not reader.done()
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
    finally:
        await layer.close_pools()


@pytest.mark.redis
async def test_a_restart_between_two_looks_is_noticed_by_its_run_id(server: RedisServer) -> None:
    layer = layer_on(server)
    layer.watch_interval = 3600.0  # look only when the test says so
    try:
        socket = await layer.new_channel()
        await layer.group_add("conv-2", socket)
        await asyncio.sleep(0.2)  # the watcher's first look: the baseline
        assert layer._watch.known == (server.run_id(),)
        server.kill()
        server.start()
        await layer.connection(0).connection_pool.disconnect()  # reconnect at the next use
        assert layer._watch.observe(await layer.run_ids())
        await layer.rejoin()
        assert await asyncio.wait_for(layer.receive(socket), 10) == {"type": REJOINED}
        await send_again(layer, "conv-2", {"type": "ping"})
        assert (await asyncio.wait_for(layer.receive(socket), 10))["type"] == "ping"
    finally:
        if layer._watcher is not None:
            layer._watcher.cancel()
        await layer.close_pools()
