from __future__ import annotations

import enum
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from tools.context import ToolContext
from tools.errors import ToolInputError, ToolRegistrationError
from tools.registry import ToolRegistry, registry, spec_from_function, tool


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: float
    y: float = 0.0


class Tree(BaseModel):
    label: str
    children: list[Tree] = []


async def paint(
    ctx: ToolContext,
    colour: Annotated[Colour, Field(description="Which colour.")],
    at: Point,
    mode: Literal["fill", "stroke"] = "fill",
) -> str:
    """Paint a point.

    Nested models and enums are inlined.
    """
    return "done"


def count(text: Annotated[str, Field(description="Any text.")], limit: int = 10) -> int:
    """Count characters."""
    return min(len(text), limit)


def test_it_builds_the_anthropic_schema_from_type_hints():
    assert spec_from_function(count).anthropic_schema() == {
        "name": "count",
        "description": "Count characters.",
        "input_schema": {
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "Any text."},
                "limit": {"type": "integer", "default": 10},
            },
            "required": ["text"],
            "additionalProperties": False,
        },
    }


def test_it_injects_the_context_instead_of_describing_it():
    spec = spec_from_function(paint)
    assert spec.context_param == "ctx"
    assert spec.is_async
    assert "ctx" not in spec.input_schema()["properties"]


def test_it_inlines_nested_models_and_enums():
    schema = spec_from_function(paint).input_schema()
    assert "$defs" not in schema
    assert schema["properties"] == {
        "colour": {"type": "string", "enum": ["red", "blue"], "description": "Which colour."},
        "at": {
            "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number", "default": 0.0}},
            "required": ["x"],
        },
        "mode": {"type": "string", "enum": ["fill", "stroke"], "default": "fill"},
    }


def test_it_keeps_defs_for_recursive_types():
    def grow(tree: Tree) -> str:
        """Grow a tree."""
        return ""

    schema = spec_from_function(grow).input_schema()
    assert schema["$defs"]["Tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}


def test_it_keeps_a_property_called_title():
    def book(title: str) -> str:
        """Find a book."""
        return title

    assert spec_from_function(book).input_schema()["properties"] == {"title": {"type": "string"}}


def test_it_cleans_the_docstring():
    assert (
        spec_from_function(paint).description
        == "Paint a point.\n\nNested models and enums are inlined."
    )


def test_it_validates_and_returns_typed_arguments():
    arguments = spec_from_function(paint).validate_input({"colour": "red", "at": {"x": 1}})
    assert arguments == {"colour": Colour.RED, "at": Point(x=1), "mode": "fill"}


def test_it_names_a_missing_field():
    with pytest.raises(ToolInputError) as caught:
        spec_from_function(count).validate_input({})
    assert caught.value.message == "Invalid input for tool count: text: Field required"


def test_it_writes_one_line_per_problem_with_what_it_got():
    with pytest.raises(ToolInputError) as caught:
        spec_from_function(count).validate_input({"text": 5, "limit": "many", "extra": 1})
    assert caught.value.message.splitlines() == [
        "Invalid input for tool count: text: Input should be a valid string (got integer 5)",
        "Invalid input for tool count: limit: Input should be a valid integer, unable to parse "
        'string as an integer (got string "many")',
        "Invalid input for tool count: extra: Extra inputs are not permitted "
        "(allowed: text, limit)",
    ]


def test_it_points_into_nested_fields():
    with pytest.raises(ToolInputError) as caught:
        spec_from_function(paint).validate_input({"colour": "green", "at": {}})
    assert caught.value.message.splitlines() == [
        "Invalid input for tool paint: colour: Input should be 'red' or 'blue' "
        '(got string "green")',
        "Invalid input for tool paint: at.x: Field required",
    ]


def test_it_refuses_input_that_is_not_an_object():
    with pytest.raises(ToolInputError) as caught:
        spec_from_function(count).validate_input(["text"])
    assert caught.value.message == (
        "Invalid input for tool count: the input must be a JSON object, got array."
    )


def test_it_accepts_parameters_named_like_model_methods():
    def pretty(json: str, schema: str = "") -> str:
        """Pretty-print JSON."""
        return json

    assert spec_from_function(pretty).validate_input({"json": "{}"}) == {"json": "{}", "schema": ""}


@pytest.mark.parametrize("name", ["", "has space", "dotted.name", "x" * 129, "été"])
def test_it_refuses_a_bad_name(name):
    with pytest.raises(ToolRegistrationError, match="must match"):
        spec_from_function(count, name=name)


def test_it_refuses_a_duplicate_name():
    tools = ToolRegistry()
    tools.register(spec_from_function(count))
    with pytest.raises(ToolRegistrationError, match=r"already taken by .*test_registry\.count"):
        tools.register(spec_from_function(count))


def test_it_refuses_a_tool_without_docstring():
    def silent(x: int) -> int:
        return x

    with pytest.raises(ToolRegistrationError, match="needs a docstring"):
        spec_from_function(silent)


def test_it_refuses_an_untyped_parameter():
    def loose(x) -> int:  # type: ignore[no-untyped-def]
        """Loose."""
        return 1

    with pytest.raises(ToolRegistrationError, match="parameter x needs a type hint"):
        spec_from_function(loose)


def test_it_refuses_varargs():
    def many(*xs: int) -> int:
        """Many."""
        return 1

    with pytest.raises(ToolRegistrationError, match="plain or keyword-only"):
        spec_from_function(many)


def test_it_wants_the_context_first():
    def late(x: int, ctx: ToolContext) -> int:
        """Late."""
        return x

    with pytest.raises(ToolRegistrationError, match="must come first"):
        spec_from_function(late)


def test_it_refuses_a_non_positive_timeout():
    with pytest.raises(ToolRegistrationError, match="timeout must be positive"):
        spec_from_function(count, timeout=0)


def test_it_registers_with_the_decorator_and_returns_the_function():
    tools = ToolRegistry()
    decorated = tool(name="counter", timeout=3, safe_to_repeat=True, into=tools)(count)
    spec = tools.get("counter")
    assert decorated is count
    assert spec is not None
    assert (spec.timeout_s, spec.safe_to_repeat, spec.is_async) == (3, True, False)


def test_it_registers_a_bare_decorator_under_the_function_name():
    try:
        assert tool(count) is count
        spec = registry.get("count")
        assert spec is not None
        assert spec.func is count
    finally:
        registry.unregister("count")


def test_it_registers_temporarily():
    with registry.temporarily(spec_from_function(count, name="temp_count")):
        assert "temp_count" in [spec.name for spec in registry.registered()]
    assert registry.get("temp_count") is None


def test_it_lists_tools_sorted_by_name():
    tools = ToolRegistry()
    tools.register(spec_from_function(count, name="zeta"))
    tools.register(spec_from_function(count, name="alpha"))
    assert tools.names() == ["alpha", "zeta"]
    assert [spec.name for spec in tools.all()] == ["alpha", "zeta"]
