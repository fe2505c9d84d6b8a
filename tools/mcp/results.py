"""What the model reads from an MCP call: results and failures as tool_result text. Pure.

* text content becomes the result text (several text blocks joined by blank lines);
* structured content, when no text came with it, becomes its JSON text;
* other content (images, audio, resources) is named, not passed on;
* `isError` results, unreachable servers and protocol errors become error results whose
  message says which server failed and how, never a traceback or the server's address.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult
from pydantic import ValidationError

MAX_DETAIL = 300


def result_text(result: CallToolResult) -> str:
    texts: list[str] = []
    others: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "unknown")
        if kind == "text":
            texts.append(str(getattr(block, "text", "")))
        else:
            mime = getattr(block, "mime_type", None)
            others.append(f"[{kind} content{f' ({mime})' if mime else ''} not shown]")
    if not any(t.strip() for t in texts) and result.structured_content is not None:
        texts = [json.dumps(result.structured_content, ensure_ascii=False)]
    return "\n\n".join([*texts, *others]).strip()


def error_result_text(server: str, tool: str, result: CallToolResult) -> str:
    detail = result_text(result) or "no message"
    return f"The tool {tool} of the MCP server {server} reported an error: {_cut(detail)}"


def leaves(exc: BaseException) -> Iterator[BaseException]:
    """The exceptions inside (nested) exception groups, or `exc` itself."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from leaves(inner)
    else:
        yield exc


def failure_text(server: str, exc: BaseException, *, http_status: int | None = None) -> str:
    """Why a call to (or a listing of) `server` failed, for the model and for admin."""
    if http_status in (401, 403):
        return (
            f"The MCP server {server} refused Tandem's credentials (HTTP {http_status}); "
            "its token in admin is missing or wrong."
        )
    found = list(leaves(exc))
    for leaf in found:
        if isinstance(leaf, httpx2.TimeoutException):
            return f"The MCP server {server} did not answer in time ({type(leaf).__name__})."
        if isinstance(leaf, httpx2.TransportError):
            return f"The MCP server {server} could not be reached ({_detail(leaf)})."
    for leaf in found:
        if isinstance(leaf, MCPError):
            status = f", HTTP {http_status}" if http_status and http_status >= 400 else ""
            return (
                f"The MCP server {server} answered with a protocol error "
                f"({_cut(leaf.error.message)}; code {leaf.error.code}{status})."
            )
        if isinstance(leaf, ValidationError | json.JSONDecodeError):
            return f"The MCP server {server} sent a malformed answer ({type(leaf).__name__})."
        if isinstance(leaf, httpx2.HTTPStatusError):
            return f"The MCP server {server} answered HTTP {leaf.response.status_code}."
    first = found[0] if found else exc
    return f"The MCP server {server} failed ({type(first).__name__}: {_detail(first)})."


def _detail(exc: BaseException) -> str:
    return _cut(str(exc)) or type(exc).__name__


def _cut(value: Any) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 1] + "…"
