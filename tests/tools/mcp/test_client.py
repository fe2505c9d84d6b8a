"""The SDK client against a real MCP server: listing, results, progress, Cancel, failures."""

from __future__ import annotations

import asyncio
import logging
import socket

import pytest

from tests.tools.mcp.server import TOKEN, TestMcpServer
from tools.errors import ToolError
from tools.mcp import client


def conn(server: TestMcpServer, token: str = TOKEN) -> client.Connection:
    return client.Connection("demo", server.url, token)


async def test_it_lists_the_tools_with_schemas_and_annotations(mcp_server: TestMcpServer) -> None:
    tools = {tool.name: tool for tool in await client.list_tools(conn(mcp_server))}
    assert {"count", "hang", "weather", "erase"} <= set(tools)
    assert tools["count"].input_schema["required"] == ["n"]
    assert tools["count"].annotations is not None and tools["count"].annotations.read_only_hint
    assert tools["hang"].annotations is None


async def test_it_calls_a_tool_and_relays_its_progress(mcp_server: TestMcpServer) -> None:
    seen: list[tuple[float | None, str]] = []
    text = await client.call_tool(
        conn(mcp_server), "count", {"n": 3}, lambda f, t: seen.append((f, t))
    )
    assert text == "counted to 3"
    assert seen == [(1 / 3, "counted 1"), (2 / 3, "counted 2"), (1.0, "counted 3")]


async def test_it_turns_a_structured_result_into_json_text(mcp_server: TestMcpServer) -> None:
    text = await client.call_tool(conn(mcp_server), "weather", {"city": "Oslo"}, _ignore)
    assert '"city": "Oslo"' in text and '"temperature_c": 21' in text


async def test_an_is_error_result_becomes_a_tool_error(mcp_server: TestMcpServer) -> None:
    with pytest.raises(ToolError, match="The tool erase of the MCP server demo reported an error"):
        await client.call_tool(conn(mcp_server), "erase", {"path": "/x"}, _ignore)


async def test_cancelling_a_call_sends_mcp_cancellation(mcp_server: TestMcpServer) -> None:
    call = asyncio.ensure_future(
        client.call_tool(conn(mcp_server), "hang", {"seconds": 30}, _ignore)
    )
    await _until(lambda: "hang" in mcp_server.calls)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await _until(mcp_server.cancelled.is_set)


async def test_a_wrong_token_is_named_as_such(mcp_server: TestMcpServer) -> None:
    with pytest.raises(client.McpFailure, match=r"refused Tandem's credentials \(HTTP 401\)"):
        await client.list_tools(conn(mcp_server, token="wrong"))
    with pytest.raises(ToolError, match="refused Tandem's credentials"):
        await client.call_tool(conn(mcp_server, token=""), "count", {"n": 1}, _ignore)


async def test_a_server_that_is_down_is_named_as_unreachable() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    down = client.Connection("gone", f"http://127.0.0.1:{port}/mcp", "t")
    with pytest.raises(ToolError, match="The MCP server gone could not be reached"):
        await client.call_tool(down, "count", {"n": 1}, _ignore)
    with pytest.raises(client.McpFailure, match="could not be reached"):
        await client.list_tools(down)


def test_the_token_is_not_in_the_connection_repr() -> None:
    assert "secret" not in repr(client.Connection("s", "http://x/mcp", "secret"))


def _ignore(fraction: float | None, text: str) -> None:
    pass


async def _until(condition: object, within: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not condition():  # type: ignore[operator]
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def test_an_endpoint_that_is_not_mcp_is_a_protocol_error(mcp_server: TestMcpServer) -> None:
    wrong = client.Connection("demo", mcp_server.url.replace("/mcp", "/elsewhere"), TOKEN)
    with pytest.raises(ToolError, match=r"answered with a protocol error \(Not Found; .*HTTP 404"):
        await client.call_tool(wrong, "count", {"n": 1}, _ignore)


async def test_the_token_is_never_logged(
    mcp_server: TestMcpServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    await client.list_tools(conn(mcp_server))
    await client.call_tool(conn(mcp_server), "count", {"n": 1}, _ignore)
    with pytest.raises(client.McpFailure):
        await client.list_tools(conn(mcp_server, token=TOKEN + "-wrong"))
    assert caplog.records  # the SDK and HTTP client did log
    assert not [r for r in caplog.records if TOKEN in r.getMessage()]
