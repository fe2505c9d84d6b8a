"""Results and failures as the model reads them (pure)."""

from __future__ import annotations

import httpx2
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, ImageContent, TextContent

from tools.mcp.results import error_result_text, failure_text, result_text


def test_text_blocks_become_the_result_text() -> None:
    result = CallToolResult(
        content=[TextContent(type="text", text="one"), TextContent(type="text", text="two")]
    )
    assert result_text(result) == "one\n\ntwo"


def test_structured_content_without_text_becomes_json_text() -> None:
    result = CallToolResult(content=[], structured_content={"a": [1, "é"]})
    assert result_text(result) == '{"a": [1, "é"]}'


def test_other_content_is_named_not_passed_on() -> None:
    image = ImageContent(type="image", data="aGk=", mime_type="image/png")
    assert result_text(CallToolResult(content=[image])) == "[image content (image/png) not shown]"


def test_an_error_result_names_the_tool_and_server() -> None:
    result = CallToolResult(content=[TextContent(type="text", text="no such file")], is_error=True)
    assert error_result_text("docs", "read", result) == (
        "The tool read of the MCP server docs reported an error: no such file"
    )


def test_failures_inside_exception_groups_are_named() -> None:
    down = ExceptionGroup("tg", [ExceptionGroup("tg", [httpx2.ConnectError("refused")])])
    assert failure_text("docs", down) == "The MCP server docs could not be reached (refused)."
    protocol = ExceptionGroup("tg", [MCPError(-32603, "Server returned an error response")])
    assert "protocol error (Server returned an error response; code -32603)" in failure_text(
        "docs", protocol
    )
    assert "refused Tandem's credentials (HTTP 403)" in failure_text(
        "docs", protocol, http_status=403
    )
    assert "did not answer in time" in failure_text("docs", httpx2.ReadTimeout("slow"))


def test_long_details_are_cut() -> None:
    text = failure_text("docs", RuntimeError("x" * 1000))
    assert len(text) < 400 and text.endswith("…).")
