import pytest

from tools.builtin.unit_convert import Unit, unit_convert
from tools.errors import ToolError, ToolInputError
from tools.registry import registry


def test_it_publishes_its_schema():
    spec = registry.get("unit_convert")
    assert spec is not None
    units = list(Unit.__args__)
    assert spec.anthropic_schema() == {
        "name": "unit_convert",
        "description": (
            "Convert an amount between units of length, mass, volume, speed or temperature\n"
            "(C, F, K; gal_us and gal_uk are US and imperial gallons)."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "value": {"type": "number", "description": "The amount to convert."},
                "from_unit": {
                    "type": "string",
                    "enum": units,
                    "description": "The unit of `value`.",
                },
                "to_unit": {
                    "type": "string",
                    "enum": units,
                    "description": "The unit to convert to (same dimension).",
                },
            },
            "required": ["value", "from_unit", "to_unit"],
            "additionalProperties": False,
        },
    }


@pytest.mark.parametrize(
    ("value", "source", "target", "answer"),
    [
        (1, "mi", "km", "1 mi = 1.609344 km"),
        (12, "in", "ft", "12 in = 1 ft"),
        (1, "kg", "lb", "1 kg = 2.204622622 lb"),
        (100, "C", "F", "100 C = 212 F"),
        (-40, "F", "C", "-40 F = -40 C"),
        (0, "K", "C", "0 K = -273.15 C"),
        (1, "gal_us", "l", "1 gal_us = 3.785411784 l"),
        (100, "km/h", "m/s", "100 km/h = 27.77777778 m/s"),
    ],
)
def test_it_converts(value, source, target, answer):
    assert unit_convert(value, source, target) == answer


def test_it_refuses_to_mix_dimensions():
    with pytest.raises(ToolError, match=r"Cannot convert kg \(mass\) to m \(length\)"):
        unit_convert(1, "kg", "m")


def test_it_refuses_temperatures_below_absolute_zero():
    with pytest.raises(ToolError, match="below absolute zero"):
        unit_convert(-300, "C", "K")


def test_it_refuses_an_infinite_result():
    with pytest.raises(ToolError, match="too large"):
        unit_convert(1e308, "km", "mm")


def test_it_lists_the_units_when_one_is_unknown():
    spec = registry.get("unit_convert")
    assert spec is not None
    with pytest.raises(ToolInputError, match="from_unit: Input should be 'm', 'km'"):
        spec.validate_input({"value": 1, "from_unit": "furlong", "to_unit": "m"})
