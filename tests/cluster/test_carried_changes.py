"""Doorbells that carry their change (``TANDEM_CARRY_CHANGES``) across processes: the digests
travel through Redis as msgpack, a worker's and another web process's included, and two tabs
on two web processes still see everything once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster.harness import Cluster
from tests.cluster.test_across_processes import (
    follow_a_demo_tool_call,
    newest_reply_words,
    results_seq,
    two_tabs,
)

pytestmark = [pytest.mark.cluster, pytest.mark.postgres, pytest.mark.redis]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    stack = Cluster(tmp_path_factory.mktemp("carrying"), extra_env={"TANDEM_CARRY_CHANGES": "1"})
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()


async def test_two_tabs_on_two_processes_follow_a_tool_call_from_carried_bells(
    cluster: Cluster,
) -> None:
    shown = cluster.shell("from django.conf import settings as s; print(s.TANDEM_CARRY_CHANGES)")
    assert shown.strip().splitlines()[-1] == "True"  # every process of the stack carries
    one, two, conversation_id = await two_tabs(cluster)
    try:
        await follow_a_demo_tool_call(cluster, one, two, conversation_id)
        for tab in (one, two):
            await tab.wait_for("Succeeded")  # the card's end, rung by the worker
        await two.send({"type": "send", "text": "and now a short one"})
        words = newest_reply_words(
            cluster, conversation_id, results_seq(cluster, conversation_id) + 1
        )
        for tab in (one, two):
            await tab.wait_for(words[-1])
    finally:
        await one.close()
        await two.close()
    assert "describing conversation" not in cluster.output()  # no digest failed to build
