"""An MCP server's tool in a conversation: asked in plain words, run in the background with
its progress on the card, paired into the thread; Cancel reaches the server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from channels.db import database_sync_to_async as db

from chat.models import Message, ToolPair
from chat.runtime import engine
from tests.conftest import frames_until
from tests.tools.mcp.server import TestMcpServer, running_server
from tools.mcp import catalog
from tools.mcp.models import McpServer
from tools.models import ToolPolicy

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[TestMcpServer]:
    with running_server() as server:
        yield server


@pytest.fixture
async def demo_server(mcp_server: TestMcpServer) -> McpServer:
    mcp_server.reset()
    server = await McpServer.objects.acreate(
        name="demo", url=mcp_server.url, token=mcp_server.token
    )
    ok, status = await db(catalog.refresh)(server)
    assert ok, status
    return server


async def test_it_runs_an_mcp_tool_with_progress_and_continues(
    connect: Any, owner: Any, conversation: Any, demo_server: McpServer
) -> None:
    socket = await connect(owner, conversation.pk)
    text = "please use the demo__count tool with n=3 and delay=0.3"
    await socket.send_json_to({"type": "send", "text": text})
    frames = await frames_until(socket, lambda f: "progress-text" in f and "counted" in f)
    assert any('value="33"' in f or 'value="67"' in f for f in frames)
    await frames_until(
        socket, lambda f: "kind-reply status-complete" in f and "counted to 3" in f, within=20
    )
    await engine.idle()
    pair = await ToolPair.objects.aget(conversation=conversation)
    assert (pair.tool_name, pair.status, pair.is_error) == ("demo__count", "succeeded", False)
    assert pair.input == {"n": 3, "delay": 0.3}
    assert pair.result_content == "counted to 3" and pair.flushed_at is not None
    kinds = [
        m.kind async for m in Message.objects.filter(conversation=conversation).order_by("seq")
    ]
    assert kinds == ["prompt", "reply", "tool_calls", "tool_results", "reply"]


async def test_cancel_reaches_the_mcp_server(
    connect: Any, owner: Any, conversation: Any, demo_server: McpServer, mcp_server: TestMcpServer
) -> None:
    await ToolPolicy.objects.filter(tool_name="demo__hang").aupdate(approval="auto")
    socket = await connect(owner, conversation.pk)
    await socket.send_json_to({"type": "send", "text": "use the demo__hang tool with seconds=60"})
    await frames_until(socket, lambda f: "progress-text" in f and "waiting" in f)
    pair = await ToolPair.objects.aget(conversation=conversation)
    await socket.send_json_to({"type": "cancel", "pair": pair.pk})
    await frames_until(socket, lambda f: "kind-reply status-complete" in f and "cancelled" in f)
    assert await asyncio.to_thread(mcp_server.cancelled.wait, 10)
    await engine.idle()
    pair = await ToolPair.objects.aget(conversation=conversation)
    assert pair.status == ToolPair.Status.CANCELLED


async def test_a_timeout_stops_the_call_and_reaches_the_mcp_server(
    connect: Any, owner: Any, conversation: Any, demo_server: McpServer, mcp_server: TestMcpServer
) -> None:
    await ToolPolicy.objects.filter(tool_name="demo__hang").aupdate(approval="auto", timeout_s=1)
    socket = await connect(owner, conversation.pk)
    await socket.send_json_to({"type": "send", "text": "use the demo__hang tool with seconds=60"})
    await frames_until(socket, lambda f: "kind-reply status-complete" in f and "timed out" in f)
    assert await asyncio.to_thread(mcp_server.cancelled.wait, 10)
    await engine.idle()
    pair = await ToolPair.objects.aget(conversation=conversation)
    assert pair.status == ToolPair.Status.TIMED_OUT and pair.is_error


async def test_a_destructive_tool_waits_for_the_owner(
    connect: Any, owner: Any, conversation: Any, demo_server: McpServer
) -> None:
    socket = await connect(owner, conversation.pk)
    await socket.send_json_to({"type": "send", "text": 'use the demo__erase tool for "/tmp/x"'})
    await frames_until(socket, lambda f: "status-awaiting_approval" in f)
    pair = await ToolPair.objects.aget(conversation=conversation)
    assert pair.decision == "awaiting owner approval" and pair.input == {"path": "/tmp/x"}


async def test_a_tool_of_a_server_that_went_down_ends_as_an_error_result(
    connect: Any, owner: Any, conversation: Any, demo_server: McpServer
) -> None:
    await McpServer.objects.filter(pk=demo_server.pk).aupdate(url="http://127.0.0.1:9/mcp")
    socket = await connect(owner, conversation.pk)
    await socket.send_json_to({"type": "send", "text": "use the demo__count tool with n=1"})
    await frames_until(socket, lambda f: "kind-reply status-complete" in f and "failed" in f)
    await engine.idle()
    pair = await ToolPair.objects.aget(conversation=conversation)
    assert pair.is_error and "The MCP server demo could not be reached" in str(pair.result_content)
