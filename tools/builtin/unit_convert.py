"""Unit conversion for length, mass, volume, speed and temperature."""

from __future__ import annotations

import math
from typing import Annotated, Literal, get_args

from pydantic import Field

from tools.errors import ToolError
from tools.registry import tool

Unit = Literal[
    "m", "km", "cm", "mm", "mi", "yd", "ft", "in", "nmi",
    "kg", "g", "mg", "t", "lb", "oz", "st",
    "l", "ml", "m3", "gal_us", "gal_uk", "fl_oz_us",
    "m/s", "km/h", "mph", "kn",
    "C", "F", "K",
]  # fmt: skip

# Each linear unit: (dimension, size in the dimension's base unit: m, kg, l, m/s).
_LINEAR: dict[str, tuple[str, float]] = {
    "m": ("length", 1.0),
    "km": ("length", 1000.0),
    "cm": ("length", 0.01),
    "mm": ("length", 0.001),
    "mi": ("length", 1609.344),
    "yd": ("length", 0.9144),
    "ft": ("length", 0.3048),
    "in": ("length", 0.0254),
    "nmi": ("length", 1852.0),
    "kg": ("mass", 1.0),
    "g": ("mass", 0.001),
    "mg": ("mass", 1e-6),
    "t": ("mass", 1000.0),
    "lb": ("mass", 0.45359237),
    "oz": ("mass", 0.028349523125),
    "st": ("mass", 6.35029318),
    "l": ("volume", 1.0),
    "ml": ("volume", 0.001),
    "m3": ("volume", 1000.0),
    "gal_us": ("volume", 3.785411784),
    "gal_uk": ("volume", 4.54609),
    "fl_oz_us": ("volume", 0.0295735295625),
    "m/s": ("speed", 1.0),
    "km/h": ("speed", 1 / 3.6),
    "mph": ("speed", 0.44704),
    "kn": ("speed", 1852 / 3600),
}
# Temperatures: kelvin = (value + offset) * scale.
_TEMPERATURE: dict[str, tuple[float, float]] = {
    "C": (273.15, 1.0),
    "F": (459.67, 5 / 9),
    "K": (0.0, 1.0),
}
assert set(_LINEAR) | set(_TEMPERATURE) == set(get_args(Unit))


@tool(timeout=5, safe_to_repeat=True)
def unit_convert(
    value: Annotated[float, Field(allow_inf_nan=False, description="The amount to convert.")],
    from_unit: Annotated[Unit, Field(description="The unit of `value`.")],
    to_unit: Annotated[Unit, Field(description="The unit to convert to (same dimension).")],
) -> str:
    """Convert an amount between units of length, mass, volume, speed or temperature
    (C, F, K; gal_us and gal_uk are US and imperial gallons)."""
    result = convert(value, from_unit, to_unit)
    if not math.isfinite(result):
        raise ToolError("The result is too large.")
    return f"{value:.10g} {from_unit} = {result:.10g} {to_unit}"


def convert(value: float, from_unit: str, to_unit: str) -> float:
    if from_unit in _TEMPERATURE and to_unit in _TEMPERATURE:
        offset, scale = _TEMPERATURE[from_unit]
        kelvin = (value + offset) * scale
        if kelvin < 0:
            raise ToolError(f"{value:.10g} {from_unit} is below absolute zero.")
        offset, scale = _TEMPERATURE[to_unit]
        return kelvin / scale - offset
    source, target = _dimension(from_unit), _dimension(to_unit)
    if source != target:
        raise ToolError(f"Cannot convert {from_unit} ({source}) to {to_unit} ({target}).")
    return value * _LINEAR[from_unit][1] / _LINEAR[to_unit][1]


def _dimension(unit: str) -> str:
    return "temperature" if unit in _TEMPERATURE else _LINEAR[unit][0]
