"""The pure rules: API names, collisions, default approval."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tools.mcp import rules

server_names = st.from_regex(r"[a-z0-9]{1,8}(?:[-_][a-z0-9]{1,8}){0,3}", fullmatch=True)
tool_names = st.text(min_size=1, max_size=140)


@given(server_names, tool_names)
def test_a_name_is_offered_exactly_when_the_api_accepts_it(server: str, tool: str) -> None:
    name = rules.api_name(server, tool)
    accepted = rules.API_NAME.fullmatch(name) is not None
    assert (rules.name_problem(server, tool) is None) == accepted


@given(server_names, st.from_regex(r"[a-zA-Z0-9_-]{1,60}", fullmatch=True))
def test_the_first_double_underscore_splits_a_name_back(server: str, tool: str) -> None:
    name = rules.api_name(server, tool)
    assert rules.server_name_ok(server)
    assert rules.is_mcp_name(name)
    assert name.partition(rules.SEPARATOR)[0] == server


def test_it_explains_why_a_name_cannot_be_offered() -> None:
    assert "characters the API refuses" in str(rules.name_problem("docs", "files/read"))
    assert "the API allows 128" in str(rules.name_problem("docs", "x" * 130))


def test_server_names_are_slugs_without_a_double_underscore() -> None:
    assert rules.server_name_ok("my-docs_2")
    for bad in ("a__b", "_a", "a_", "A", "a b", "a" * 41, ""):
        assert not rules.server_name_ok(bad)


def test_built_in_names_are_not_mcp_names() -> None:
    assert not rules.is_mcp_name("tool_buffer_demo")
    assert not rules.is_mcp_name("__x")
    assert not rules.is_mcp_name("demo__")


def test_it_finds_collisions_with_other_owners_only() -> None:
    taken = {"docs__search": "a built-in tool", "docs__read": rules.owner_label("docs")}
    assert rules.collisions("docs", ["search", "read", "new"], taken) == [
        "docs__search is already the name of a built-in tool"
    ]


def test_default_approval_comes_from_the_annotations() -> None:
    assert rules.default_approval({"readOnlyHint": True}) == "auto"
    assert rules.default_approval({"destructiveHint": True}) == "owner"
    assert rules.default_approval({"readOnlyHint": False}) == "owner"
    assert rules.default_approval({}) == "owner"


def test_only_read_only_or_idempotent_tools_are_safe_to_repeat() -> None:
    assert rules.safe_to_repeat({"readOnlyHint": True})
    assert rules.safe_to_repeat({"idempotentHint": True})
    assert not rules.safe_to_repeat({"destructiveHint": True})


def test_a_schema_that_is_not_an_object_schema_is_replaced() -> None:
    assert rules.input_schema({"type": "string"}) == {"type": "object", "properties": {}}
    kept = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert rules.input_schema(kept) == kept


def test_a_missing_description_is_filled_in() -> None:
    assert rules.description("docs", "read", "  ") == "The tool read of the MCP server docs."
    assert rules.description("docs", "read", "Read a file.") == "Read a file."
