"""Test-only tools for the restart tests, loaded by the live server through the setting
``TANDEM_EXTRA_TOOL_MODULES=tests.e2e.restart_tools`` (never imported by the test run itself).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from tools.context import ToolContext
from tools.registry import tool


@tool(timeout=600, safe_to_repeat=False)
async def slow_unsafe(
    ctx: ToolContext,
    seconds: Annotated[int, Field(ge=0, le=600, description="How long to work, in seconds.")] = 30,
) -> str:
    """Work for a while on something that must not be done twice (a test tool that is not safe
    to repeat after a server restart)."""
    for second in range(seconds):
        ctx.report_progress(second / seconds, f"{second} of {seconds} s")
        await ctx.sleep(1)
    return f"slow_unsafe finished after {seconds} s."
