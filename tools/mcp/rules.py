"""The pure rules of MCP tools: the names the model sees, collisions, and default policies.

A server's tool `search` on the server `docs` is offered as `docs__search`. Server names are
lowercase slugs without a double underscore, so the first `__` always splits a name back.
The API accepts tool names matching `^[a-zA-Z0-9_-]{1,128}$` (docs/anthropic-api.md, rule 12).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

SEPARATOR = "__"
MAX_SERVER_NAME = 40
MAX_API_NAME = 128
SERVER_NAME = re.compile(r"^[a-z0-9]+(?:[-_][a-z0-9]+)*$")
SERVER_NAME_HELP = (
    "Lowercase letters and digits, single - or _ between them (no __), at most "
    f"{MAX_SERVER_NAME} characters."
)
API_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")

Approval = Literal["auto", "owner"]


def server_name_ok(name: str) -> bool:
    return len(name) <= MAX_SERVER_NAME and SERVER_NAME.fullmatch(name) is not None


def api_name(server: str, tool: str) -> str:
    return f"{server}{SEPARATOR}{tool}"


def is_mcp_name(name: str) -> bool:
    """Whether `name` can be an MCP tool's name (a cheap test before a database look-up)."""
    server, sep, tool = name.partition(SEPARATOR)
    return bool(sep and tool) and server_name_ok(server)


def name_problem(server: str, tool: str) -> str | None:
    """Why `<server>__<tool>` cannot be offered to the model, or None if it can."""
    name = api_name(server, tool)
    if len(name) > MAX_API_NAME:
        return (
            f"{name[:40]}… is {len(name)} characters long; the API allows {MAX_API_NAME} "
            "(shorten the server's name)"
        )
    if not API_NAME.fullmatch(name):
        bad = "".join(sorted({c for c in tool if not re.fullmatch(r"[a-zA-Z0-9_-]", c)}))
        return f"the tool name {tool!r} has characters the API refuses ({bad!r})"
    return None


def collisions(server: str, tools: Iterable[str], taken: Mapping[str, str]) -> list[str]:
    """Messages for each of `server`'s tool names already used by another tool.

    `taken` maps API names in use to who owns them ("a built-in tool", "MCP server x"); names
    owned by `server` itself are not collisions.
    """
    found = []
    for tool in tools:
        name = api_name(server, tool)
        owner = taken.get(name)
        if owner is not None and owner != owner_label(server):
            found.append(f"{name} is already the name of {owner}")
    return found


def owner_label(server: str) -> str:
    return f"a tool of the MCP server {server}"


def default_approval(annotations: Mapping[str, Any]) -> Approval:
    """Read-only tools run automatically; destructive or unannotated ones wait for the owner."""
    if annotations.get("readOnlyHint") is True:
        return "auto"
    return "owner"


def safe_to_repeat(annotations: Mapping[str, Any]) -> bool:
    """Whether a call cut by a restart may be run again (read-only or idempotent)."""
    return annotations.get("readOnlyHint") is True or annotations.get("idempotentHint") is True


def description(server: str, tool: str, given: str | None) -> str:
    text = (given or "").strip()
    return text or f"The tool {tool} of the MCP server {server}."


def input_schema(given: Mapping[str, Any] | None) -> dict[str, Any]:
    """The schema as the server gave it, made an object schema if it is not one."""
    schema = dict(given or {})
    if schema.get("type") != "object":
        schema = {"type": "object", "properties": {}}
    schema.setdefault("properties", {})
    return schema
