"""The seed project's demo: a tool that takes a while, so the conversation can go on meanwhile."""

from __future__ import annotations

import time
from typing import Annotated

from pydantic import Field

from tools.context import ToolContext
from tools.registry import tool

MAX_SECONDS = 3600
STEP_S = 0.1


@tool(timeout=MAX_SECONDS + 60, safe_to_repeat=True)
async def tool_buffer_demo(
    ctx: ToolContext,
    seconds: Annotated[
        int, Field(ge=0, le=MAX_SECONDS, description="How long the demo runs, in seconds.")
    ] = 10,
    sample_data: Annotated[
        str | None,
        Field(max_length=2000, description="Optional text to echo back when the demo finishes."),
    ] = None,
) -> str:
    """Run a harmless demo task in the background for a number of seconds, reporting progress,
    then report success. Use it to show that the conversation can continue while a tool runs."""
    started = time.monotonic()
    reported = -1
    while True:
        elapsed = time.monotonic() - started
        whole = min(int(elapsed), seconds)
        if whole != reported:
            ctx.report_progress(whole / seconds if seconds else 1.0, f"{whole} of {seconds} s")
            reported = whole
        if elapsed >= seconds:
            break
        await ctx.sleep(min(STEP_S, seconds - elapsed))
    result = f"tool_buffer_demo finished after {seconds} s. The test was successful."
    if sample_data is not None:
        result += f" Sample data: {sample_data}"
    return result
