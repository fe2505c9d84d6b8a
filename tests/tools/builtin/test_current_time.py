import re
from datetime import UTC, datetime, timedelta

import pytest

from tools.builtin.current_time import current_time, find_zone
from tools.errors import ToolError
from tools.registry import registry


def test_it_publishes_its_schema():
    spec = registry.get("current_time")
    assert spec is not None
    assert spec.safe_to_repeat
    assert spec.anthropic_schema() == {
        "name": "current_time",
        "description": "Tell the current date, time and UTC offset in a time zone.",
        "input_schema": {
            "type": "object",
            "properties": {
                "timezone": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 64,
                    "default": "UTC",
                    "description": (
                        "IANA time zone name, e.g. Europe/Paris, America/New_York or UTC."
                    ),
                }
            },
            "additionalProperties": False,
        },
    }


async def test_it_tells_the_time_in_a_known_zone():
    answer = await current_time("Asia/Tokyo")
    iso = re.search(r"ISO 8601: (\S+)\)", answer)
    assert iso is not None
    moment = datetime.fromisoformat(iso.group(1))
    assert answer.startswith("It is ")
    assert " JST in Asia/Tokyo " in answer
    assert moment.utcoffset() == timedelta(hours=9)
    assert abs(moment - datetime.now(UTC)) < timedelta(seconds=5)


async def test_it_defaults_to_utc():
    assert " UTC in UTC " in await current_time()


def test_it_forgives_case_and_spaces():
    assert find_zone("america/new york").key == "America/New_York"


async def test_it_suggests_a_zone_for_a_bare_city():
    with pytest.raises(ToolError) as caught:
        await current_time("Paris")
    assert caught.value.message == (
        "Unknown time zone 'Paris'. Use an IANA name in Area/City form, e.g. Europe/Paris, "
        "America/New_York, Asia/Tokyo, or UTC. Did you mean Europe/Paris?"
    )


@pytest.mark.parametrize(
    "name", ["Mars/Olympus_Mons", "../../etc/passwd", "/etc/localtime", "\x00"]
)
def test_it_refuses_unknown_zones(name):
    with pytest.raises(ToolError, match="Unknown time zone"):
        find_zone(name)
