"""A safe calculator: arithmetic parsed with `ast` and evaluated by hand, never with eval().

Every operation is bounded, so no input of the allowed length can take noticeable time or memory:
integers stay below MAX_INT_BITS, powers are refused before they are computed when their result
would be too large, and only a handful of math functions and constants are known.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Annotated

from pydantic import Field

from tools.errors import ToolError
from tools.registry import tool

MAX_EXPRESSION_CHARS = 500
MAX_INT_BITS = 1024  # about 10**308, the float range
MAX_ROUND_DIGITS = 100

Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}


def _round(x: Number, ndigits: Number = 0) -> Number:
    if not isinstance(ndigits, int) or abs(ndigits) > MAX_ROUND_DIGITS:
        raise ToolError("round: ndigits must be a whole number between -100 and 100.")
    return round(x, ndigits) if ndigits else round(x)


def _log(x: Number, base: Number = math.e) -> float:
    return math.log(x, base)


_FUNCTIONS: dict[str, tuple[Callable[..., Number], int, int]] = {
    # name: (function, minimum arguments, maximum arguments)
    "sqrt": (math.sqrt, 1, 1),
    "sin": (math.sin, 1, 1),
    "cos": (math.cos, 1, 1),
    "tan": (math.tan, 1, 1),
    "log": (_log, 1, 2),
    "exp": (math.exp, 1, 1),
    "abs": (abs, 1, 1),
    "round": (_round, 1, 2),
    "min": (lambda *xs: min(xs), 1, 50),
    "max": (lambda *xs: max(xs), 1, 50),
}


@tool(timeout=10, safe_to_repeat=True)
def calculate(
    expression: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_EXPRESSION_CHARS,
            description=(
                "An arithmetic expression, e.g. (2 + 3) * sqrt(16) / 7. Supports + - * / // % **, "
                "parentheses, pi, e and sqrt, sin, cos, tan (radians), log(x[, base]), exp, abs, "
                "round(x[, ndigits]), min, max."
            ),
        ),
    ],
) -> str:
    """Evaluate an arithmetic expression exactly and safely. Use it instead of mental arithmetic."""
    return format_number(evaluate(expression))


def evaluate(expression: str) -> Number:
    """The value of `expression`, or a ToolError saying what is not allowed or went wrong."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"The expression is longer than {MAX_EXPRESSION_CHARS} characters.")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ToolError(f"Could not parse the expression: {exc.msg}.") from None
    except (ValueError, RecursionError, MemoryError):
        raise ToolError("Could not parse the expression.") from None
    try:
        return _checked(_eval(tree.body))
    except ZeroDivisionError:
        raise ToolError("Division by zero.") from None
    except OverflowError:
        raise ToolError("The result is too large.") from None
    except RecursionError:
        raise ToolError("The expression is nested too deeply.") from None


def _eval(node: ast.expr) -> Number:
    match node:
        case ast.Constant(value=bool()):
            raise ToolError("True and False are not numbers here.")
        case ast.Constant(value=int() | float() as value):
            return _checked(value)
        case ast.UnaryOp(op=ast.UAdd(), operand=operand):
            return +_eval(operand)
        case ast.UnaryOp(op=ast.USub(), operand=operand):
            return -_eval(operand)
        case ast.BinOp(left=left, op=ast.Pow(), right=right):
            return _power(_eval(left), _eval(right))
        case ast.BinOp(left=left, op=op, right=right) if type(op) in _BINARY:
            return _checked(_BINARY[type(op)](_eval(left), _eval(right)))
        case ast.Name(id=name) if name in _CONSTANTS:
            return _CONSTANTS[name]
        case ast.Call(func=ast.Name(id=name), args=args, keywords=[]) if name in _FUNCTIONS:
            return _call(name, [_eval(arg) for arg in args])
        case ast.Call(func=ast.Name(id=name)) if name in _FUNCTIONS:
            raise ToolError(f"{name}() takes positional arguments only.")
        case ast.Name(id=name):
            raise ToolError(f"Unknown name {name!r}. Known constants: pi, e.")
        case ast.Call(func=ast.Name(id=name)):
            known = ", ".join(_FUNCTIONS)
            raise ToolError(f"Unknown function {name!r}. Known functions: {known}.")
        case _:
            source = ast.unparse(node)
            if len(source) > 40:
                source = source[:37] + "..."
            raise ToolError(f"Not allowed in a calculation: {source!r} ({type(node).__name__}).")


def _power(base: Number, exponent: Number) -> Number:
    if isinstance(base, int) and isinstance(exponent, int) and abs(base) > 1:
        # |base| >= 2 ** (bits - 1), so the result has at least (bits - 1) * exponent bits.
        if exponent > 0 and (abs(base).bit_length() - 1) * exponent > MAX_INT_BITS:
            raise ToolError("The result is too large.")
        if exponent < -MAX_INT_BITS:
            return 0.0
    result = base**exponent
    if isinstance(result, complex):
        raise ToolError("The result is not a real number.")
    return _checked(result)


def _call(name: str, args: list[Number]) -> Number:
    func, least, most = _FUNCTIONS[name]
    if not least <= len(args) <= most:
        expected = f"{least}" if least == most else f"{least} to {most}"
        raise ToolError(f"{name}() takes {expected} argument(s), got {len(args)}.")
    try:
        return _checked(func(*args))
    except ValueError:
        raise ToolError(f"{name}(): math domain error (the argument is out of range).") from None


def _checked(value: Number) -> Number:
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ToolError("The result is too large.")
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError("The result is not a finite number.")
    return value


def format_number(value: Number) -> str:
    """Integers exactly; floats in their shortest form, without a trailing .0 when whole."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)
