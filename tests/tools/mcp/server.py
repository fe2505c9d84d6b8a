"""A real MCP server for tests: the official SDK's MCPServer over streamable HTTP on loopback.

Started in a thread (uvicorn on a free port), shared by a module's tests. It checks a bearer
token, and records what it saw (calls, cancellations) for the tests to assert on.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

TOKEN = "test-token-4f1c"


class TestMcpServer:
    __test__ = False

    def __init__(self, name: str = "demo", token: str = TOKEN) -> None:
        self.token = token
        self.cancelled = threading.Event()
        self.hanging = threading.Event()
        self.calls: list[str] = []
        self.app_server = MCPServer(name, log_level="WARNING")
        self._add_tools()
        self._uvicorn: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def _add_tools(self) -> None:
        mcp = self.app_server

        @mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
        async def count(n: int, ctx: Context, delay: float = 0.0) -> str:
            """Count from 1 to n, reporting progress at each step."""
            self.calls.append("count")
            for i in range(n):
                await ctx.report_progress(i + 1, n, f"counted {i + 1}")
                await anyio.sleep(delay)
            return f"counted to {n}"

        @mcp.tool()
        async def hang(seconds: float, ctx: Context) -> str:
            """Wait, reporting half-way progress first (to test Cancel and timeouts)."""
            self.calls.append("hang")
            await ctx.report_progress(1, 2, "waiting")
            self.hanging.set()
            try:
                await anyio.sleep(seconds)
            except anyio.get_cancelled_exc_class():
                self.cancelled.set()
                raise
            return "woke up"

        @mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
        def weather(city: str) -> dict[str, Any]:
            """The weather in a city, as structured content."""
            return {"city": city, "temperature_c": 21}

        @mcp.tool(annotations=ToolAnnotations(destructive_hint=True))
        def erase(path: str) -> str:
            """Pretend to erase a file; always fails."""
            raise ValueError(f"cannot erase {path}")

    def start(self) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            _Bearer(self.app_server.streamable_http_app(), self.token),
            log_level="warning",
            lifespan="on",
            ws="none",
        )
        self._uvicorn = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._uvicorn.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._uvicorn.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the test MCP server did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        if self._uvicorn is not None and self._thread is not None:
            self._uvicorn.should_exit = True
            self._thread.join(timeout=10)

    def reset(self) -> None:
        self.cancelled.clear()
        self.hanging.clear()
        self.calls.clear()

    @contextmanager
    def extra_tool(self, name: str) -> Iterator[None]:
        """A tool listed only inside the block (the server's side of a refresh)."""

        def extra(text: str) -> str:
            return text.upper()

        self.app_server.add_tool(extra, name=name, description="Shout a text.")
        try:
            yield
        finally:
            self.app_server.remove_tool(name)


class _Bearer:
    """Refuse every HTTP request without the right bearer token (401)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (
            scope["type"] == "http"
            and dict(scope["headers"]).get(b"authorization") != self.expected
        ):
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await self.app(scope, receive, send)


@contextmanager
def running_server(name: str = "demo") -> Iterator[TestMcpServer]:
    server = TestMcpServer(name)
    server.start()
    try:
        yield server
    finally:
        server.stop()
