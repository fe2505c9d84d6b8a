"""MCP servers in admin: add, see the tools, refresh; the token is write-only; access rules."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from tests.tools.mcp.helpers import add_server
from tests.tools.mcp.server import TestMcpServer
from tools.mcp.models import McpServer, McpTool
from tools.models import ToolPolicy

pytestmark = pytest.mark.django_db

ADD = "admin:mcp_mcpserver_add"
CHANGELIST = "admin:mcp_mcpserver_changelist"
INLINE = {"tools-TOTAL_FORMS": "0", "tools-INITIAL_FORMS": "0"}


@pytest.fixture
def staff_client(staff: Any) -> Client:
    client = Client()
    client.force_login(staff)
    return client


def form(mcp_server: TestMcpServer, **fields: str) -> dict[str, str]:
    data = {"name": "demo", "url": mcp_server.url, "token": mcp_server.token, "enabled": "on"}
    return {**data, **INLINE, **fields}


def change_url(server: McpServer) -> str:
    return reverse("admin:mcp_mcpserver_change", args=[server.pk])


def test_staff_add_a_server_and_see_its_tools(
    staff_client: Client, mcp_server: TestMcpServer
) -> None:
    response = staff_client.post(reverse(ADD), form(mcp_server), follow=True)
    assert response.status_code == 200
    assert "MCP server demo: Listed 4 tools." in response.content.decode()
    server = McpServer.objects.get(name="demo")
    page = staff_client.get(change_url(server)).content.decode()
    for name in ("demo__count", "demo__hang", "demo__weather", "demo__erase"):
        assert name in page
    assert "runs automatically" in page and "the conversation owner approves" in page


def test_the_token_is_never_shown_back_and_kept_when_left_empty(
    staff_client: Client, mcp_server: TestMcpServer
) -> None:
    staff_client.post(reverse(ADD), form(mcp_server))
    server = McpServer.objects.get(name="demo")
    page = staff_client.get(change_url(server)).content.decode()
    assert mcp_server.token not in page
    assert "a token is stored (write-only)" in page
    staff_client.post(change_url(server), form(mcp_server, token=""))
    server.refresh_from_db()
    assert server.token == mcp_server.token
    staff_client.post(change_url(server), form(mcp_server, token="", clear_token="on"))
    server.refresh_from_db()
    assert server.token == "" and not server.refresh_ok


def test_an_unreachable_server_is_saved_and_says_why(
    staff_client: Client, mcp_server: TestMcpServer
) -> None:
    response = staff_client.post(reverse(ADD), form(mcp_server, token="wrong"), follow=True)
    assert "refused Tandem&#x27;s credentials (HTTP 401)" in response.content.decode()
    server = McpServer.objects.get(name="demo")
    page = staff_client.get(change_url(server)).content.decode()
    assert "Failed: The MCP server demo refused Tandem&#x27;s credentials" in page
    assert not server.tools.exists()


def test_a_name_collision_is_refused_with_a_clear_error(
    staff_client: Client, mcp_server: TestMcpServer
) -> None:
    add_server(mcp_server, name="first")
    McpTool.objects.filter(api_name="first__count").update(api_name="second__count")
    response = staff_client.post(reverse(ADD), form(mcp_server, name="second"))
    assert response.status_code == 200  # the form again, with the error
    text = response.content.decode()
    assert "Refused: the server&#x27;s tools would take names already in use" in text
    assert "second__count is already the name of a tool of the MCP server first" in text
    assert not McpServer.objects.filter(name="second").exists()


def test_the_refresh_action_picks_up_new_tools(
    staff_client: Client, mcp_server: TestMcpServer
) -> None:
    server = add_server(mcp_server)
    with mcp_server.extra_tool("shout"):
        response = staff_client.post(
            reverse(CHANGELIST),
            {"action": "refresh_tools", "_selected_action": [server.pk]},
            follow=True,
        )
    assert "MCP server demo: Listed 5 tools. Added: demo__shout." in response.content.decode()
    assert McpTool.objects.filter(api_name="demo__shout", present=True).exists()


def test_the_token_variable_must_have_the_tandem_prefix(
    staff_client: Client, mcp_server: TestMcpServer
) -> None:
    response = staff_client.post(reverse(ADD), form(mcp_server, token="", token_env="SECRET_KEY"))
    assert "The name must start with TANDEM_MCP_TOKEN_" in response.content.decode()
    assert not McpServer.objects.exists()


def test_a_user_who_is_not_staff_is_sent_to_the_login(owner: Any) -> None:
    client = Client()
    client.force_login(owner)
    for url in (reverse(ADD), reverse(CHANGELIST)):
        response = client.get(url)
        assert response.status_code == 302 and "/login/" in response["Location"]


def test_staff_without_the_permission_cannot_see_or_add_servers(
    mcp_server: TestMcpServer,
) -> None:
    clerk = get_user_model().objects.create_user("clerk", password="clerk-pass-123", is_staff=True)
    client = Client()
    client.force_login(clerk)
    assert client.get(reverse(CHANGELIST)).status_code == 403
    assert client.post(reverse(ADD), form(mcp_server)).status_code == 403
    assert not McpServer.objects.exists()
    clerk.user_permissions.add(Permission.objects.get(codename="view_mcpserver"))
    server = add_server(mcp_server)
    assert mcp_server.token not in client.get(change_url(server)).content.decode()
    page = client.get(reverse(CHANGELIST)).content.decode()
    assert "demo" in page and "refresh_tools" not in page  # the action needs "change"
    assert client.post(change_url(server), form(mcp_server)).status_code == 403


def test_each_tool_has_a_policy_page_with_its_description(
    staff_client: Client, mcp_server: TestMcpServer
) -> None:
    add_server(mcp_server)
    row = ToolPolicy.objects.get(tool_name="demo__weather")
    page = staff_client.get(reverse("admin:tools_toolpolicy_change", args=[row.pk]))
    assert "The weather in a city, as structured content." in page.content.decode()
    listed = staff_client.get(reverse("admin:tools_toolpolicy_changelist")).content.decode()
    assert "demo__weather" in listed
