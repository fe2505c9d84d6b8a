"""MCP tools in the registry, read from the database, and run by the tool executor."""

from __future__ import annotations

import asyncio

import pytest

from tests.tools.mcp.helpers import add_server
from tests.tools.mcp.server import TestMcpServer
from tools.context import ToolContext
from tools.errors import ToolInputError
from tools.execution import execute
from tools.mcp.models import McpServer
from tools.mcp.source import McpToolSpec
from tools.registry import registry

pytestmark = pytest.mark.django_db


def spec(name: str) -> McpToolSpec:
    found = registry.get(name)
    assert isinstance(found, McpToolSpec)
    return found


def test_the_registry_offers_the_tools_of_enabled_servers(mcp_server: TestMcpServer) -> None:
    server = add_server(mcp_server)
    assert "demo__count" in registry.names()
    count = spec("demo__count")
    assert count.anthropic_schema()["input_schema"]["required"] == ["n"]
    assert count.description.startswith("Count from 1 to n")
    assert count.safe_to_repeat  # read-only
    McpServer.objects.filter(pk=server.pk).update(enabled=False)
    assert registry.get("demo__count") is None
    assert "demo__count" not in registry.names()


def test_input_is_validated_against_the_servers_schema(mcp_server: TestMcpServer) -> None:
    add_server(mcp_server)
    count = spec("demo__count")
    assert count.validate_input({"n": 2}) == {"arguments": {"n": 2}}
    with pytest.raises(ToolInputError, match=r"Invalid input for tool demo__count: n: 'two'"):
        count.validate_input({"n": "two"})
    with pytest.raises(ToolInputError, match="'n' is a required property"):
        count.validate_input({})


def test_a_call_runs_with_progress_through_the_tool_context(mcp_server: TestMcpServer) -> None:
    add_server(mcp_server)
    seen: list[tuple[float | None, str]] = []
    ctx = ToolContext("toolu_1", on_progress=lambda f, t: seen.append((f, t)))
    outcome = asyncio.run(execute(spec("demo__count"), {"n": 2}, ctx, timeout_s=30))
    assert (outcome.status, outcome.content, outcome.is_error) == (
        "succeeded",
        "counted to 2",
        False,
    )
    assert seen == [(0.5, "counted 1"), (1.0, "counted 2")]


def test_cancel_stops_the_call_and_the_server_sees_it(mcp_server: TestMcpServer) -> None:
    add_server(mcp_server)
    hang = spec("demo__hang")

    async def run() -> str:
        ctx = ToolContext("toolu_2")
        call = asyncio.ensure_future(execute(hang, {"seconds": 30}, ctx, timeout_s=60))
        assert await asyncio.to_thread(mcp_server.hanging.wait, 10)
        ctx.cancel()
        outcome = await call
        await _until(mcp_server.cancelled.is_set)
        return outcome.status

    assert asyncio.run(run()) == "cancelled"


def test_a_timeout_sends_cancellation_too(mcp_server: TestMcpServer) -> None:
    add_server(mcp_server)
    hang = spec("demo__hang")

    async def run() -> tuple[str, str]:
        outcome = await execute(hang, {"seconds": 30}, ToolContext("t"), timeout_s=1)
        await _until(mcp_server.cancelled.is_set)
        return outcome.status, str(outcome.content)

    status, content = asyncio.run(run())
    assert status == "timed_out" and "timed out after 1 s" in content


def test_a_server_error_result_is_an_error_outcome(mcp_server: TestMcpServer) -> None:
    add_server(mcp_server)
    outcome = asyncio.run(
        execute(spec("demo__erase"), {"path": "/x"}, ToolContext("t"), timeout_s=30)
    )
    assert outcome.status == "failed" and outcome.is_error
    assert "The tool erase of the MCP server demo reported an error" in str(outcome.content)


async def _until(condition: object, within: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not condition():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)
