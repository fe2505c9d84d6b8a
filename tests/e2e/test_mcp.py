"""Staff add an MCP server in admin; a user asks for its tool in plain words and watches it run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import send, start_conversation
from tests.tools.mcp.server import TestMcpServer, running_server

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[TestMcpServer]:
    with running_server() as server:
        yield server


def test_staff_add_an_mcp_server_and_a_user_runs_its_tool(
    new_page: Any, mcp_server: TestMcpServer
) -> None:
    admin = new_page("staff")
    admin.goto("/admin/mcp/mcpserver/add/")
    admin.get_by_label("Name").fill("demo")
    admin.get_by_label("URL").fill(mcp_server.url)
    admin.get_by_label("Bearer token").fill(mcp_server.token)
    admin.locator("input[name='_continue']").click()
    admin.locator(".messagelist", has_text="MCP server demo: Listed 4 tools.").wait_for()
    assert "demo__count" in admin.locator(".inline-group").inner_text()
    assert mcp_server.token not in admin.content()

    chat = new_page("alice")
    start_conversation(chat)
    send(chat, "Please use the demo__count tool with n=6 and delay=0.5")
    card = chat.locator(".tool-card", has_text="demo__count")
    card.wait_for()
    card.locator(".progress-text", has_text="counted").wait_for()
    assert 0 < int(card.locator("progress").get_attribute("value") or 0) < 100
    chat.locator(".tool-card.status-succeeded", has_text="demo__count").wait_for()
    reply = chat.locator(".kind-reply.status-complete", has_text="call finished: counted to 6")
    reply.wait_for()
