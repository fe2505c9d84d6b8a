"""Request builders and a tiny SSE reader for the simulator tests."""

from __future__ import annotations

import json
from typing import Any

MODEL = "claude-sonnet-5-5"
TOOLS: list[dict[str, Any]] = [
    {
        "name": "tool_buffer_demo",
        "description": "Sleeps, then reports.",
        "input_schema": {"type": "object", "properties": {"seconds": {"type": "number"}}},
    },
    {
        "name": "current_time",
        "description": "The time in a timezone.",
        "input_schema": {"type": "object", "properties": {"timezone": {"type": "string"}}},
    },
    {
        "name": "calculate",
        "description": "Evaluates arithmetic.",
        "input_schema": {"type": "object", "properties": {"expression": {"type": "string"}}},
    },
]


def request(text: str, **extra: Any) -> dict[str, Any]:
    """A valid request body with one user turn."""
    return {"model": MODEL, "max_tokens": 2048, "messages": [user(text)], **extra}


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def assistant(content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def tool_use(tool_id: str, name: str = "current_time", **input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": input}


def tool_result(tool_id: str, content: Any = "ok", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content, **extra}


def parse_sse(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Events of a raw SSE body (test-only: the client path leaves this to the SDK)."""
    events = []
    for frame in raw.decode().split("\n\n"):
        if not frame.strip():
            continue
        lines = dict(line.split(": ", 1) for line in frame.split("\n"))
        events.append((lines["event"], json.loads(lines["data"])))
    return events
