"""MCP tools as ToolSpecs, read from the database on every look-up.

Nothing about an MCP tool is kept in process memory here: the spec a task gets is built from
the rows at that moment (server URL, token, tool name, schema), in whichever process runs it.
(The schemas a turn offers are kept by ``chat.services.config_cache`` under the configuration
generation, which every change of these rows moves: ``tools.config_generation``.)
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from django.db.models import QuerySet
from pydantic import BaseModel, ConfigDict

from tools.context import ToolContext
from tools.errors import ToolInputError
from tools.mcp import client, rules
from tools.mcp.models import McpTool
from tools.registry import ToolSpec


class _AnyObject(BaseModel):
    """Placeholder input model: MCP tools are validated against the server's JSON Schema."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class McpToolSpec(ToolSpec):
    schema: dict[str, Any] = field(default_factory=dict)
    server: str = ""

    def input_schema(self) -> dict[str, Any]:
        return copy.deepcopy(self.schema)

    def validate_input(self, raw: object) -> dict[str, Any]:
        prefix = f"Invalid input for tool {self.name}"
        if not isinstance(raw, dict):
            raise ToolInputError(f"{prefix}: the input must be a JSON object.")
        validator_class = jsonschema.validators.validator_for(self.schema)
        try:
            validator_class.check_schema(self.schema)
        except jsonschema.SchemaError:
            return {"arguments": raw}  # the server's own schema is broken: let it judge
        errors = sorted(validator_class(self.schema).iter_errors(raw), key=lambda e: e.path)
        if errors:
            lines = []
            for error in errors[:10]:
                where = ".".join(str(part) for part in error.path) or "input"
                lines.append(f"{prefix}: {where}: {error.message[:200]}")
            raise ToolInputError("\n".join(lines))
        return {"arguments": raw}


async def _call(
    conn: client.Connection, tool: str, arguments: dict[str, Any], ctx: ToolContext
) -> str:
    return await client.call_tool(conn, tool, arguments, ctx.report_progress)


def spec_of(row: McpTool) -> McpToolSpec:
    server = row.server
    conn = client.Connection(server.name, server.url, server.bearer_token())
    return McpToolSpec(
        name=row.api_name,
        description=rules.description(server.name, row.name, row.description),
        func=functools.partial(_call, conn, row.name),
        is_async=True,
        input_model=_AnyObject,
        safe_to_repeat=rules.safe_to_repeat(row.annotations or {}),
        context_param="ctx",
        schema=rules.input_schema(row.input_schema),
        server=server.name,
    )


def _usable() -> QuerySet[McpTool]:
    return McpTool.objects.filter(present=True, server__enabled=True).select_related("server")


class McpToolSource:
    """The `ToolSource` of MCP tools: present tools of enabled servers."""

    def get(self, name: str) -> ToolSpec | None:
        if not rules.is_mcp_name(name):
            return None
        row = _usable().filter(api_name=name).first()
        return spec_of(row) if row is not None else None

    def all(self) -> list[ToolSpec]:
        return [spec_of(row) for row in _usable()]
