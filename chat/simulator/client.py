"""An SDK client wired to an in-process simulator."""

from __future__ import annotations

import anthropic
import httpx2

from .transport import Simulator

SIMULATOR_BASE_URL = "https://api.anthropic.com"


def make_client(
    sim: Simulator, *, max_retries: int = 2, api_key: str = "simulator"
) -> anthropic.AsyncAnthropic:
    """`AsyncAnthropic` over `httpx2.MockTransport(sim.handle)`.

    The base URL is fixed so that a stray ANTHROPIC_BASE_URL cannot change the request paths.
    """
    transport = httpx2.MockTransport(sim.handle)
    return anthropic.AsyncAnthropic(
        api_key=api_key,
        base_url=SIMULATOR_BASE_URL,
        max_retries=max_retries,
        http_client=httpx2.AsyncClient(transport=transport),
    )
