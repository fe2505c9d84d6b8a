import time

import pytest

from tools.builtin.calculate import calculate, evaluate, format_number
from tools.errors import ToolError
from tools.registry import registry


def test_it_publishes_its_schema():
    spec = registry.get("calculate")
    assert spec is not None
    assert not spec.is_async
    assert spec.safe_to_repeat
    assert spec.anthropic_schema() == {
        "name": "calculate",
        "description": (
            "Evaluate an arithmetic expression exactly and safely. Use it instead of mental "
            "arithmetic."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "expression": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 500,
                    "description": (
                        "An arithmetic expression, e.g. (2 + 3) * sqrt(16) / 7. Supports "
                        "+ - * / // % **, parentheses, pi, e and sqrt, sin, cos, tan (radians), "
                        "log(x[, base]), exp, abs, round(x[, ndigits]), min, max."
                    ),
                }
            },
            "required": ["expression"],
            "additionalProperties": False,
        },
    }


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("1 + 2 * 3", "7"),
        ("(1 + 2) * 3", "9"),
        ("7 / 2", "3.5"),
        ("7 // 2", "3"),
        ("-7 % 3", "2"),
        ("2 ** 10", "1024"),
        ("2 ** -1", "0.5"),
        ("-(+3)", "-3"),
        ("0.1 + 0.2", "0.30000000000000004"),
        ("sqrt(16) + abs(-2)", "6"),
        ("round(pi, 2)", "3.14"),
        ("round(2.5)", "2"),
        ("log(e)", "1"),
        ("log(8, 2)", "3"),
        ("exp(0) + sin(0) + cos(0) + tan(0)", "2"),
        ("min(3, 1, 2) + max(4, 5)", "6"),
        ("2 ** 100", "1267650600228229401496703205376"),
        ("1e20", "1e+20"),
    ],
)
def test_it_does_arithmetic(expression, result):
    assert calculate(expression) == result


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os')", "Unknown function '__import__'"),
        ("(1).real", "Not allowed in a calculation: '1 .real' (Attribute)"),
        ("x + 1", "Unknown name 'x'"),
        ("'a' * 3", "Not allowed in a calculation: \"'a'\" (Constant)"),
        ("[1, 2]", "Not allowed in a calculation: '[1, 2]' (List)"),
        ("1 < 2", "(Compare)"),
        ("lambda: 1", "(Lambda)"),
        ("True + 1", "True and False are not numbers here."),
        ("1j", "(Constant)"),
        ("round(1.5, ndigits=1)", "round() takes positional arguments only."),
        ("sqrt(1, 2)", "sqrt() takes 1 argument(s), got 2."),
        ("sqrt(-1)", "sqrt(): math domain error"),
        ("(-8) ** 0.5", "The result is not a real number."),
        ("1 / 0", "Division by zero."),
        ("5 % 0", "Division by zero."),
        ("0 ** -1", "Division by zero."),
        ("1 +", "Could not parse the expression"),
        ("round(1, -1000)", "ndigits must be a whole number"),
        ("exp(1000)", "The result is too large."),
        ("10.0 ** 400", "The result is too large."),
        ("1e999", "The result is not a finite number."),
    ],
)
def test_it_refuses_what_is_not_arithmetic(expression, message):
    with pytest.raises(ToolError) as caught:
        evaluate(expression)
    assert message in caught.value.message


@pytest.mark.parametrize(
    "expression",
    ["10 ** 10 ** 10", "9 ** 9 ** 9 ** 9", "2 ** 1025", "(2 ** 1000) * (2 ** 1000)", "9" * 400],
)
def test_it_refuses_huge_numbers_quickly(expression):
    started = time.monotonic()
    with pytest.raises(ToolError, match="too large"):
        evaluate(expression)
    assert time.monotonic() - started < 0.1


def test_it_refuses_long_input():
    with pytest.raises(ToolError, match="longer than 500 characters"):
        evaluate("1+" * 250 + "1")


def test_it_refuses_deep_nesting():
    with pytest.raises(ToolError):
        evaluate("(" * 240 + "1" + ")" * 240)


def test_it_formats_numbers_for_reading():
    assert format_number(5.0) == "5"
    assert format_number(1e17) == "1e+17"
    assert format_number(-0.25) == "-0.25"
