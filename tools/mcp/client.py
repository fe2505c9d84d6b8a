"""Talking to an MCP server with the official SDK (`mcp` 2.x) over streamable HTTP.

One connection per listing or call: nothing lives between calls, so a call runs the same in
the web process and in a task worker. The bearer token goes in a header of the HTTP client
and nowhere else (not in logs, not in messages). Cancelling the task that awaits `call_tool`
(Cancel, a timeout) makes the SDK send MCP cancellation for the request in flight.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation, Tool

from tools.errors import ToolError
from tools.mcp.results import error_result_text, failure_text, result_text

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 300.0  # between bytes; a call's own deadline is the tool pair's timeout
CLIENT_INFO = Implementation(name="tandem", version="1")

ProgressFn = Callable[[float | None, str], None]


@dataclass(frozen=True)
class Connection:
    """Where a server is and how to sign in: loaded from the database for each use."""

    server: str
    url: str
    token: str = field(default="", repr=False)


class McpFailure(Exception):
    """A listing failed; the message says why (fit for admin and logs)."""


@dataclass
class _Statuses:
    """HTTP error statuses seen on the connection (the SDK reports them as protocol errors)."""

    errors: list[int] = field(default_factory=list)

    async def record(self, response: httpx2.Response) -> None:
        if response.status_code >= 400:
            self.errors.append(response.status_code)

    @property
    def first(self) -> int | None:
        return self.errors[0] if self.errors else None


@asynccontextmanager
async def _connected(conn: Connection, statuses: _Statuses) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {conn.token}"} if conn.token else {}
    http = httpx2.AsyncClient(
        headers=headers,
        timeout=httpx2.Timeout(CONNECT_TIMEOUT_S, read=READ_TIMEOUT_S),
        event_hooks={"response": [statuses.record]},
    )
    transport: Any = streamable_http_client(conn.url, http_client=http)
    async with http, Client(transport, client_info=CLIENT_INFO, cache=None) as client:
        yield client


async def list_tools(conn: Connection) -> list[Tool]:
    """Every tool the server lists (all pages), or `McpFailure` saying why not."""
    statuses = _Statuses()
    tools: list[Tool] = []
    try:
        async with _connected(conn, statuses) as client:
            cursor: str | None = None
            for _ in range(100):  # a paginator that never ends cannot hang a refresh
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
    except Exception as exc:
        message = failure_text(conn.server, exc, http_status=statuses.first)
        logger.info("Listing the tools of MCP server %s failed: %s", conn.server, message)
        raise McpFailure(message) from exc
    return tools


async def call_tool(
    conn: Connection, tool: str, arguments: dict[str, Any], on_progress: ProgressFn
) -> str:
    """The call's result text; a `ToolError` with a clear message for every failure."""

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        fraction = progress / total if total else None
        shown = f"{progress:g} of {total:g}" if total else f"{progress:g}"
        on_progress(fraction, message or shown)

    statuses = _Statuses()
    try:
        async with _connected(conn, statuses) as client:
            result = await client.call_tool(tool, arguments, progress_callback=progress)
    except Exception as exc:
        message = failure_text(conn.server, exc, http_status=statuses.first)
        logger.info("Calling %s on MCP server %s failed: %s", tool, conn.server, message)
        raise ToolError(message) from None
    if result.is_error:
        raise ToolError(error_result_text(conn.server, tool, result))
    return result_text(result) or "(the tool returned no content)"
