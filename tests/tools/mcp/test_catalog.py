"""Refreshing a server's tools: added, removed, returning tools, collisions, failures."""

from __future__ import annotations

import pytest

from tests.tools.mcp.helpers import add_server
from tests.tools.mcp.server import TestMcpServer
from tools.mcp import catalog
from tools.mcp.models import McpServer, McpTool
from tools.models import ToolPolicy

pytestmark = pytest.mark.django_db


def policy(name: str) -> ToolPolicy:
    return ToolPolicy.objects.get(tool_name=name)


def test_it_lists_the_tools_with_policies_from_their_annotations(
    mcp_server: TestMcpServer,
) -> None:
    server = add_server(mcp_server)
    assert server.refresh_ok and server.refresh_status.startswith("Listed 4 tools.")
    names = set(McpTool.objects.filter(present=True).values_list("api_name", flat=True))
    assert names == {"demo__count", "demo__hang", "demo__weather", "demo__erase"}
    assert policy("demo__count").approval == "auto"  # read-only
    assert policy("demo__weather").approval == "auto"
    assert policy("demo__erase").approval == "owner"  # destructive
    assert policy("demo__hang").approval == "owner"  # no annotation
    schema = McpTool.objects.get(api_name="demo__count").input_schema
    assert schema["properties"]["n"]["type"] == "integer"


def test_refresh_adds_and_retires_tools_keeping_the_policy_row(
    mcp_server: TestMcpServer,
) -> None:
    with mcp_server.extra_tool("shout"):
        server = add_server(mcp_server)
        assert policy("demo__shout").enabled
    ok, summary = catalog.refresh(server)
    assert ok and "No longer listed: demo__shout (policies switched off)" in summary
    retired = McpTool.objects.get(api_name="demo__shout")
    assert not retired.present
    assert not policy("demo__shout").enabled  # the row stays, for the old pairs' history
    with mcp_server.extra_tool("shout"):
        ok, summary = catalog.refresh(server)
    assert ok and "Listed again: demo__shout" in summary
    assert McpTool.objects.get(api_name="demo__shout").present
    assert not policy("demo__shout").enabled  # staff switch it back on deliberately


def test_a_refresh_keeps_policies_staff_edited(mcp_server: TestMcpServer) -> None:
    server = add_server(mcp_server)
    ToolPolicy.objects.filter(tool_name="demo__erase").update(approval="staff", timeout_s=9)
    catalog.refresh(server)
    assert (policy("demo__erase").approval, policy("demo__erase").timeout_s) == ("staff", 9)


def test_a_collision_with_another_servers_tool_is_refused(mcp_server: TestMcpServer) -> None:
    add_server(mcp_server)
    McpTool.objects.filter(api_name="demo__count").update(api_name="other__count")
    other = McpServer.objects.create(name="other", url=mcp_server.url, token=mcp_server.token)
    ok, message = catalog.refresh(other)
    assert not ok
    assert message == (
        "Refused: other__count is already the name of a tool of the MCP server demo."
    )
    assert not other.tools.exists()
    other.refresh_from_db()
    assert not other.refresh_ok and other.refresh_status == message


def test_an_unreachable_server_records_why_and_changes_nothing(
    mcp_server: TestMcpServer,
) -> None:
    server = add_server(mcp_server)
    McpServer.objects.filter(pk=server.pk).update(token="wrong")
    server.refresh_from_db()
    ok, message = catalog.refresh(server)
    assert not ok and "refused Tandem's credentials (HTTP 401)" in message
    assert McpTool.objects.filter(server=server, present=True).count() == 4


def test_the_token_may_come_from_a_named_environment_variable(
    mcp_server: TestMcpServer, settings: object
) -> None:
    settings.TANDEM_MCP_TOKENS = {"TANDEM_MCP_TOKEN_DEMO": mcp_server.token}  # type: ignore[attr-defined]
    server = add_server(mcp_server, token="", token_env="TANDEM_MCP_TOKEN_DEMO")
    assert server.refresh_ok, server.refresh_status


def test_tools_whose_names_the_api_refuses_are_not_offered() -> None:
    from mcp.types import Tool

    listing = catalog.listing_of(
        "docs",
        [
            Tool(name="files/read", input_schema={"type": "object"}),
            Tool(name="ok", input_schema={}),
        ],
    )
    assert [tool.name for tool in listing.tools] == ["ok"]
    assert listing.skipped == [
        "files/read: the tool name 'files/read' has characters the API refuses ('/')"
    ]
