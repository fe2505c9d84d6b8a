"""Refreshing a server's tools: list them with the SDK, then add, update and retire rows.

Listing (network) and applying (database) are separate steps, so admin can list while it
validates a form and refuse a name collision before anything is saved. A tool the server no
longer lists keeps its row (not present) and its policy row (switched off), so old tool pairs
keep their history; a returning tool keeps its policy as it was.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from mcp.types import Tool

from tools.mcp import client, rules
from tools.mcp.models import McpServer, McpTool
from tools.models import ToolPolicy
from tools.registry import registry


@dataclass(frozen=True)
class ListedTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]


@dataclass(frozen=True)
class Listing:
    tools: list[ListedTool] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # tools that cannot be offered, and why


class Collision(Exception):
    """The server's tools would take names other tools already have."""


def connection_of(server: McpServer) -> client.Connection:
    return client.Connection(server.name, server.url, server.bearer_token())


def fetch(server: McpServer) -> Listing:
    """List the server's tools (blocking, bounded by TANDEM_MCP_LIST_TIMEOUT_S).

    Raises `client.McpFailure` saying why the server could not be listed.
    """
    conn = connection_of(server)
    timeout = float(settings.TANDEM_MCP_LIST_TIMEOUT_S)

    async def bounded() -> list[Tool]:
        try:
            return await asyncio.wait_for(client.list_tools(conn), timeout)
        except TimeoutError:
            raise client.McpFailure(
                f"The MCP server {server.name} did not list its tools within {timeout:g} s."
            ) from None

    return listing_of(server.name, async_to_sync(bounded)())


def listing_of(server: str, tools: list[Tool]) -> Listing:
    listed, skipped = [], []
    for tool in tools:
        problem = rules.name_problem(server, tool.name)
        if problem is not None:
            skipped.append(f"{tool.name}: {problem}")
            continue
        annotations = (
            tool.annotations.model_dump(by_alias=True, exclude_none=True)
            if (tool.annotations)
            else {}
        )
        listed.append(
            ListedTool(tool.name, tool.description or "", dict(tool.input_schema), annotations)
        )
    return Listing(listed, skipped)


def collisions(server: str, listing: Listing) -> list[str]:
    """Names of the listing already used by a built-in tool or another server's tool."""
    taken = {spec.name: "a built-in tool" for spec in registry.registered()}
    others = McpTool.objects.exclude(server__name=server).values_list("api_name", "server__name")
    taken.update({name: rules.owner_label(owner) for name, owner in others})
    return rules.collisions(server, [tool.name for tool in listing.tools], taken)


def apply(server: McpServer, listing: Listing) -> str:
    """Store the listing; returns the summary also kept on the server. Raises `Collision`."""
    with transaction.atomic():
        server = McpServer.objects.select_for_update().get(pk=server.pk)
        clashes = collisions(server.name, listing)
        if clashes:
            raise Collision("Refused: " + "; ".join(clashes) + ".")
        rows = {row.name: row for row in server.tools.all()}
        added, returned = [], []
        for tool in listing.tools:
            row = rows.pop(tool.name, None)
            name = rules.api_name(server.name, tool.name)
            if row is None:
                row = McpTool(server=server, name=tool.name, api_name=name)
                added.append(name)
            elif not row.present:
                returned.append(name)
            row.api_name, row.description = name, tool.description
            row.input_schema, row.annotations, row.present = (
                tool.input_schema,
                tool.annotations,
                True,
            )
            row.save()
            ToolPolicy.objects.get_or_create(
                tool_name=name, defaults={"approval": rules.default_approval(tool.annotations)}
            )
        removed = [row.api_name for row in rows.values() if row.present]
        McpTool.objects.filter(server=server, api_name__in=removed).update(present=False)
        ToolPolicy.objects.filter(tool_name__in=removed).update(enabled=False)
        summary = _summary(listing, added, returned, removed)
        _record(server, ok=True, status=summary)
    return summary


def record_failure(server: McpServer, message: str) -> None:
    _record(server, ok=False, status=message)


def refresh(server: McpServer) -> tuple[bool, str]:
    """List and apply; (worked, what happened). Never raises for the server's faults."""
    try:
        listing = fetch(server)
        return True, apply(server, listing)
    except (client.McpFailure, Collision) as exc:
        record_failure(server, str(exc))
        return False, str(exc)


def _record(server: McpServer, *, ok: bool, status: str) -> None:
    McpServer.objects.filter(pk=server.pk).update(
        refreshed_at=timezone.now(), refresh_ok=ok, refresh_status=status
    )


def _summary(listing: Listing, added: list[str], returned: list[str], removed: list[str]) -> str:
    count = len(listing.tools)
    parts = [f"Listed {count} tool{'' if count == 1 else 's'}."]
    if added:
        parts.append(f"Added: {', '.join(added)}.")
    if returned:
        parts.append(
            f"Listed again: {', '.join(returned)} (their policies stay as they were; "
            "switch them on in Tool policies)."
        )
    if removed:
        parts.append(f"No longer listed: {', '.join(removed)} (policies switched off).")
    if listing.skipped:
        parts.append(f"Not offered: {'; '.join(listing.skipped)}.")
    return " ".join(parts)
