"""Field-level checks of a Messages request, worded like the API's own schema errors.

These run on the request exactly as sent, so paths use the raw message indices (as the API's
schema layer would); the protocol rules of validator.py then run on merged turns. Wordings in the
pydantic style ("Field required", "Input should be ...") are what the API returns for schema errors;
the few that are not confirmed from a real capture say so.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

from .errors import InvalidRequest

CREATE_KEYS = frozenset(
    {
        "model", "messages", "max_tokens", "system", "stop_sequences", "stream", "metadata",
        "tools", "tool_choice", "thinking", "service_tier", "container", "cache_control",
        "diagnostics", "inference_geo", "output_config", "speed", "user_profile_id",
        "workspace_id", "temperature", "top_p", "top_k",
    }
)  # fmt: skip
COUNT_TOKENS_KEYS = frozenset(
    {
        "model", "messages", "system", "tools", "tool_choice", "thinking", "cache_control",
        "output_config", "speed", "user_profile_id", "workspace_id",
    }
)  # fmt: skip
BLOCK_TYPES = (
    "text", "image", "document", "search_result", "thinking", "redacted_thinking", "tool_use",
    "tool_result",
)  # fmt: skip
TOOL_RESULT_CONTENT_TYPES = ("text", "image")  # rule 15
USER_ONLY = frozenset({"tool_result"})
ASSISTANT_ONLY = frozenset({"tool_use", "thinking", "redacted_thinking"})
TOOL_CHOICE_TYPES = ("auto", "any", "tool", "none")
THINKING_TYPES = ("enabled", "disabled", "adaptive", "between_tools")
TOOL_NAME_PATTERN = "^[a-zA-Z0-9_-]{1,128}$"
TOOL_USE_ID_PATTERN = "^[a-zA-Z0-9_-]+$"


def fail(path: str, message: str) -> NoReturn:
    raise InvalidRequest(f"{path}: {message}" if path else message)


def tag_error(path: str, value: Any, expected: tuple[str, ...]) -> NoReturn:
    tags = ", ".join(f"'{tag}'" for tag in expected)
    fail(
        path,
        f"Input tag '{value}' found using 'type' does not match any of the expected tags: {tags}",
    )


def require(obj: dict[str, Any], key: str, path: str) -> Any:
    if key not in obj:
        fail(f"{path}.{key}" if path else key, "Field required")
    return obj[key]


def expect_str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        fail(path, "Input should be a valid string")
    return value


def expect_int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        fail(path, "Input should be a valid integer")
    return value


def expect_dict(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        fail(path, "Input should be a valid dictionary")
    return value


def expect_list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        fail(path, "Input should be a valid list")
    return value


def check_body(body: dict[str, Any], *, count_tokens: bool) -> None:
    allowed = COUNT_TOKENS_KEYS if count_tokens else CREATE_KEYS
    for key in body:
        if key not in allowed:
            fail(key, "Extra inputs are not permitted")
    expect_str(require(body, "model", ""), "model")
    if not count_tokens:
        _check_max_tokens(body)
    messages = expect_list(require(body, "messages", ""), "messages")
    for index, message in enumerate(messages):
        _check_message(message, f"messages.{index}")
    if "system" in body:
        _check_system(body["system"])
    if "tools" in body:
        _check_tools(body["tools"])
    if "tool_choice" in body:
        _check_tool_choice(body["tool_choice"])
    if "thinking" in body:
        _check_thinking(body["thinking"])
    if "stop_sequences" in body:
        for index, item in enumerate(expect_list(body["stop_sequences"], "stop_sequences")):
            expect_str(item, f"stop_sequences.{index}")
    if "metadata" in body:
        expect_dict(body["metadata"], "metadata")


def _check_max_tokens(body: dict[str, Any]) -> None:
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        fail("stream", "Input should be a valid boolean")
    max_tokens = expect_int(require(body, "max_tokens", ""), "max_tokens")
    # max_tokens 0 warms the prompt cache, on non-streaming requests only (unconfirmed details).
    if max_tokens < (1 if stream else 0):
        fail("max_tokens", f"Input should be greater than or equal to {1 if stream else 0}")


def _check_message(message: Any, path: str) -> None:
    message = expect_dict(message, path)
    role = require(message, "role", path)
    if role not in ("user", "assistant"):
        fail(f"{path}.role", "Input should be 'user' or 'assistant'")
    content = require(message, "content", path)
    if isinstance(content, str):
        return
    for index, block in enumerate(expect_list(content, f"{path}.content")):
        block_path = f"{path}.content.{index}"
        kind = check_block(block, block_path, BLOCK_TYPES)
        if kind in USER_ONLY and role != "user":
            fail(block_path, f"`{kind}` blocks can only be in `user` messages")  # unconfirmed
        if kind in ASSISTANT_ONLY and role != "assistant":
            fail(block_path, f"`{kind}` blocks can only be in `assistant` messages")  # unconfirmed


def check_block(block: Any, path: str, allowed: tuple[str, ...]) -> str:
    """Check one content block and return its type."""
    block = expect_dict(block, path)
    if "type" not in block:
        fail(path, "Unable to extract tag using discriminator 'type'")
    kind = block["type"]
    if kind not in allowed:
        tag_error(path, kind, allowed)
    if kind == "text":
        expect_str(require(block, "text", path), f"{path}.text")
    elif kind in ("image", "document"):
        expect_dict(require(block, "source", path), f"{path}.source")
    elif kind == "thinking":
        expect_str(require(block, "thinking", path), f"{path}.thinking")
        expect_str(require(block, "signature", path), f"{path}.signature")
    elif kind == "redacted_thinking":
        expect_str(require(block, "data", path), f"{path}.data")
    elif kind == "tool_use":
        tool_id = expect_str(require(block, "id", path), f"{path}.id")
        if not re.fullmatch(TOOL_USE_ID_PATTERN, tool_id):
            fail(f"{path}.id", f"String should match pattern '{TOOL_USE_ID_PATTERN}'")
        expect_str(require(block, "name", path), f"{path}.name")
        expect_dict(require(block, "input", path), f"{path}.input")
    elif kind == "tool_result":
        _check_tool_result(block, path)
    if block.get("cache_control") is not None:
        check_cache_control(block["cache_control"], f"{path}.cache_control")
    return str(kind)


def _check_tool_result(block: dict[str, Any], path: str) -> None:
    expect_str(require(block, "tool_use_id", path), f"{path}.tool_use_id")
    if "is_error" in block and not isinstance(block["is_error"], bool):
        fail(f"{path}.is_error", "Input should be a valid boolean")
    content = block.get("content", "")
    if isinstance(content, str):
        return
    for index, item in enumerate(expect_list(content, f"{path}.content")):
        check_block(item, f"{path}.content.{index}", TOOL_RESULT_CONTENT_TYPES)


def check_cache_control(value: Any, path: str) -> None:
    value = expect_dict(value, path)
    if require(value, "type", path) != "ephemeral":
        fail(f"{path}.type", "Input should be 'ephemeral'")
    if value.get("ttl", "5m") not in ("5m", "1h"):
        fail(f"{path}.ttl", "Input should be '5m' or '1h'")


def _check_system(system: Any) -> None:
    if isinstance(system, str):
        return
    for index, block in enumerate(expect_list(system, "system")):
        path = f"system.{index}"
        check_block(block, path, ("text",))
        if block.get("cache_control") is not None and block["text"] == "":
            fail(path, "cache_control cannot be set for empty text blocks")  # rule 13, unconfirmed
        if block["text"] == "":
            fail("system", "text content blocks must be non-empty")
        if not block["text"].strip():
            fail("system", "text content blocks must contain non-whitespace text")


def _check_tools(tools: Any) -> None:
    names: set[str] = set()
    for index, tool in enumerate(expect_list(tools, "tools")):
        tool = expect_dict(tool, f"tools.{index}")
        if tool.get("type") not in (None, "custom"):
            # A server tool (web search and friends): only its name matters here.
            name = expect_str(require(tool, "name", f"tools.{index}"), f"tools.{index}.name")
        else:
            path = f"tools.{index}.custom"
            name = expect_str(require(tool, "name", path), f"{path}.name")
            if not re.fullmatch(TOOL_NAME_PATTERN, name):
                fail(f"{path}.name", f"String should match pattern '{TOOL_NAME_PATTERN}'")
            schema = expect_dict(require(tool, "input_schema", path), f"{path}.input_schema")
            if schema.get("type") != "object":
                fail(f"{path}.input_schema.type", "Input should be 'object'")
            if "description" in tool:
                expect_str(tool["description"], f"{path}.description")
        if tool.get("cache_control") is not None:
            check_cache_control(tool["cache_control"], f"tools.{index}.cache_control")
        if name in names:
            fail("tools", "Tool names must be unique.")  # unconfirmed wording
        names.add(name)


def _check_tool_choice(choice: Any) -> None:
    choice = expect_dict(choice, "tool_choice")
    kind = require(choice, "type", "tool_choice")
    if kind not in TOOL_CHOICE_TYPES:
        tag_error("tool_choice", kind, TOOL_CHOICE_TYPES)
    if kind == "tool":
        expect_str(require(choice, "name", "tool_choice.tool"), "tool_choice.tool.name")
    parallel = choice.get("disable_parallel_tool_use", False)
    if not isinstance(parallel, bool):
        fail(f"tool_choice.{kind}.disable_parallel_tool_use", "Input should be a valid boolean")


def _check_thinking(thinking: Any) -> None:
    thinking = expect_dict(thinking, "thinking")
    kind = require(thinking, "type", "thinking")
    if kind not in THINKING_TYPES:
        tag_error("thinking", kind, THINKING_TYPES)
    if kind == "enabled":
        budget = require(thinking, "budget_tokens", "thinking.enabled")
        budget = expect_int(budget, "thinking.enabled.budget_tokens")
        if budget < 1024:
            fail("thinking.enabled.budget_tokens", "Input should be greater than or equal to 1024")
