"""The current date and time in any IANA time zone."""

from __future__ import annotations

import functools
import zoneinfo
from datetime import datetime
from typing import Annotated

from pydantic import Field

from tools.errors import ToolError
from tools.registry import tool


@tool(timeout=5, safe_to_repeat=True)
async def current_time(
    timezone: Annotated[
        str,
        Field(
            min_length=1,
            max_length=64,
            description="IANA time zone name, e.g. Europe/Paris, America/New_York or UTC.",
        ),
    ] = "UTC",
) -> str:
    """Tell the current date, time and UTC offset in a time zone."""
    zone = find_zone(timezone)
    now = datetime.now(zone)
    return (
        f"It is {now:%A %d %B %Y, %H:%M:%S} {now.tzname()} in {zone.key} "
        f"(ISO 8601: {now.isoformat(timespec='seconds')})."
    )


def find_zone(name: str) -> zoneinfo.ZoneInfo:
    """The zone named exactly, or ignoring case; otherwise a ToolError that suggests a name."""
    name = name.strip()
    wanted = name.replace(" ", "_").lower()
    zones = _zones_by_lower_name()
    if wanted in zones:
        return zoneinfo.ZoneInfo(zones[wanted])
    cities = [zone for lower, zone in zones.items() if lower.rsplit("/", 1)[-1] == wanted]
    hint = f" Did you mean {' or '.join(cities[:3])}?" if cities else ""
    raise ToolError(
        f"Unknown time zone {name!r}. Use an IANA name in Area/City form, e.g. Europe/Paris, "
        f"America/New_York, Asia/Tokyo, or UTC.{hint}"
    )


@functools.cache
def _zones_by_lower_name() -> dict[str, str]:
    # Only names listed by the system's tz database reach ZoneInfo: never the model's raw input.
    return {zone.lower(): zone for zone in sorted(zoneinfo.available_timezones())}
