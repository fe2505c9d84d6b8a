from __future__ import annotations

from tests.tools.mcp.server import TOKEN, TestMcpServer
from tools.mcp import catalog
from tools.mcp.models import McpServer


def add_server(mcp_server: TestMcpServer, name: str = "demo", **fields: object) -> McpServer:
    """A server row for the test server, refreshed."""
    defaults: dict[str, object] = {"url": mcp_server.url, "token": TOKEN}
    server = McpServer.objects.create(name=name, **{**defaults, **fields})
    catalog.refresh(server)
    server.refresh_from_db()
    return server
