"""Shared fixtures: a fast simulator, an SDK client on it, and a clean fault queue."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import anthropic
import pytest

from chat.simulator import Simulator, clear_faults, make_client


@pytest.fixture(autouse=True)
def no_faults() -> Iterator[None]:
    clear_faults()
    yield
    clear_faults()


@pytest.fixture
def sim() -> Simulator:
    return Simulator(tokens_per_second=0)


@pytest.fixture
async def client(sim: Simulator) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with make_client(sim) as sdk:
        yield sdk
