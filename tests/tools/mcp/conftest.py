from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.tools.mcp.server import TestMcpServer, running_server


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[TestMcpServer]:
    """One real MCP server per test module (fast); its records are reset for each test."""
    with running_server() as server:
        yield server


@pytest.fixture(autouse=True)
def _reset_records(request: pytest.FixtureRequest) -> None:
    if "mcp_server" in request.fixturenames:
        request.getfixturevalue("mcp_server").reset()
