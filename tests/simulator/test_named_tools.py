"""The simulated model calls an offered tool named in plain words (MCP tools are named so)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chat.simulator.brain import decide
from chat.simulator.intents import plan_tool_calls

from .helpers import TOOLS, request

SEARCH = {
    "name": "docs__search",
    "description": "Search the docs.",
    "input_schema": {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer"},
            "exact": {"type": "boolean"},
            "score": {"type": "number"},
        },
        "required": ["query"],
    },
}


def planned(said: str, tools: list[dict[str, Any]] | None = None) -> list[tuple[str, Any]]:
    plan = plan_tool_calls(said, [SEARCH] if tools is None else tools, {})
    return [(call.name, json.loads(call.input_json)) for call in plan.calls]


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ('use the docs__search tool with query="django tasks"', {"query": "django tasks"}),
        ("use docs__search with query: tasks, limit 3", {"query": "tasks", "limit": 3}),
        ('run docs__search for "x y" with exact=yes', {"query": "x y", "exact": True}),
        ('call `docs__search` with {"query": "a.b", "limit": 2}', {"query": "a.b", "limit": 2}),
        ("use the docs__search tool with query=tasks score=0.5.", {"query": "tasks", "score": 0.5}),
        ("use the docs__search tool with limit=lots", {"limit": "lots"}),
    ],
)
def test_it_reads_the_input_written_after_the_name(said: str, expected: Any) -> None:
    assert planned(said) == [("docs__search", expected)]


def test_it_calls_only_tools_the_request_offers() -> None:
    assert planned("use the docs__search tool with query=x", tools=TOOLS) == []
    assert planned("use the docs__read tool with path=x") == []


def test_it_announces_the_call_and_streams_it_as_tool_use() -> None:
    reply = decide(request("please use the docs__search tool with query=x", tools=[SEARCH]))
    assert reply.stop_reason == "tool_use"
    assert reply.blocks[0].content == (
        "I'll run docs__search in the background; we can keep talking meanwhile."
    )
    assert reply.blocks[1].name == "docs__search"


@given(st.text(max_size=80))
def test_it_never_calls_a_tool_that_is_not_named(said: str) -> None:
    for name, _ in planned(said):
        assert name in said
