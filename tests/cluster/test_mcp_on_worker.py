"""An MCP tool on the scale-out stack: the call runs on a tool worker (issues 11 and 12).

The test MCP server (tests/tools/mcp/server.py) runs in this process on loopback; the cluster's
processes get its token from a `TANDEM_MCP_TOKEN_*` variable named on the server's row, which is
added and refreshed with the code admin's "Refresh tools" runs.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator

import pytest

from tests.cluster.harness import Cluster, Tab
from tests.cluster.test_across_processes import (
    PAIR,
    newest_reply_words,
    results_seq,
    tool_results,
    two_tabs,
)
from tests.tools.mcp.server import TOKEN, TestMcpServer, running_server

pytestmark = [pytest.mark.cluster, pytest.mark.postgres, pytest.mark.redis]

TOKEN_ENV = "TANDEM_MCP_TOKEN_CLUSTER_DEMO"


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[TestMcpServer]:
    with running_server() as server:
        yield server


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, mcp_server: TestMcpServer
) -> Iterator[Cluster]:
    """The stack with the token in every process's environment and the server added."""
    stack = Cluster(tmp_path_factory.mktemp("cluster"), extra_env={TOKEN_ENV: TOKEN})
    try:
        stack.start()
        printed = stack.shell(
            "from tools.mcp import catalog; from tools.mcp.models import McpServer; "
            f"s = McpServer.objects.create(name='demo', url={mcp_server.url!r}, "
            f"token_env={TOKEN_ENV!r}); print(catalog.refresh(s))"
        )
        assert "(True, 'Listed 4 tools." in printed, printed
        # Cancel needs a call that waits; `hang` has no annotations (the owner approves).
        stack.sql("UPDATE tools_toolpolicy SET approval = 'auto' WHERE tool_name = 'demo__hang'")
        stack.sql("UPDATE tools_configgeneration SET token = token + 1")  # plain SQL: no signal
        yield stack
    finally:
        stack.stop()


@pytest.fixture(autouse=True)
def _reset_records(mcp_server: TestMcpServer) -> None:
    mcp_server.reset()


def progress_shown(tab: Tab) -> list[str]:
    """The MCP server's progress messages ("counted 2") a tab was shown."""
    return [m.group(0) for _, text in tab.frames for m in re.finditer(r"counted \d+", text)]


async def test_an_mcp_call_runs_on_a_worker_and_its_progress_reaches_another_process(
    cluster: Cluster, mcp_server: TestMcpServer
) -> None:
    one, two, conversation_id = await two_tabs(cluster)
    try:
        await one.send(
            {"type": "send", "text": "Please use the demo__count tool with n=4 and delay=0.4"}
        )
        await two.wait_for("call finished: counted to 4", within=60)  # the model went on
        assert progress_shown(two), "no MCP progress reached the tab on web 2"
        (_, status, runner, attempts), *others = cluster.sql(PAIR, conversation_id)
        assert not others and (status, attempts) == ("succeeded", 1)
        assert cluster.child_of(str(runner)).startswith("worker")  # not a web process
        assert mcp_server.calls == ["count"]  # the server saw the one call
        assert len(tool_results(cluster, conversation_id)) == 1
        assert cluster.sql(
            "SELECT tool_name, result_content, is_error FROM chat_toolpair"
            " WHERE conversation_id = %s",
            conversation_id,
        ) == [("demo__count", "counted to 4", False)]
        await one.wait_for("call finished: counted to 4")
    finally:
        await one.close()
        await two.close()


async def test_cancel_on_another_process_reaches_the_mcp_server(
    cluster: Cluster, mcp_server: TestMcpServer
) -> None:
    one, two, conversation_id = await two_tabs(cluster)
    try:
        await one.send({"type": "send", "text": "Please use the demo__hang tool with seconds=60"})
        await two.wait_for("waiting", within=60)  # the server's half-way progress
        assert await asyncio.to_thread(mcp_server.hanging.wait, 10)
        (pair_id, status, runner, _), *_ = cluster.sql(PAIR, conversation_id)
        assert status == "running" and cluster.child_of(str(runner)).startswith("worker")
        pressed = time.monotonic()
        await two.send({"type": "cancel", "pair": pair_id})
        # At MCP 2026-07-28 over streamable HTTP, closing the call's response stream is the
        # cancellation (the SDK turns its `notifications/cancelled` into that): the server's
        # handler is cancelled. Before that era the SDK POSTs the notification instead.
        stopped = await asyncio.to_thread(mcp_server.cancelled.wait, 10)
        took = time.monotonic() - pressed
        assert stopped, "no MCP cancellation reached the server"
        assert took < 2.0, f"MCP cancellation reached the server after {took:.2f} s"
        words = newest_reply_words(cluster, conversation_id, results_seq(cluster, conversation_id))
        rows = cluster.wait_sql(
            "SELECT status FROM chat_toolpair WHERE id = %s",
            pair_id,
            until=lambda r: r[0][0] == "cancelled",
            within=10,
        )
        assert rows == [("cancelled",)]
        assert len(tool_results(cluster, conversation_id)) == 1
        await one.wait_for(words[-1])  # the model went on, in the tab on web 1 too
    finally:
        await one.close()
        await two.close()
