from __future__ import annotations

from django.apps import AppConfig


class McpConfig(AppConfig):
    name = "tools.mcp"
    label = "mcp"
    verbose_name = "MCP tool servers"

    def ready(self) -> None:
        from tools import config_generation
        from tools.mcp.models import McpServer, McpTool
        from tools.mcp.source import McpToolSource
        from tools.registry import registry

        registry.add_source(McpToolSource())
        config_generation.watch(McpServer, McpTool)
