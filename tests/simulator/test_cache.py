"""The simulator's prompt cache accounts reads and writes as the API does (fake clock)."""

from __future__ import annotations

from typing import Any

import anthropic

from chat.simulator import Simulator, make_client
from chat.simulator.cache import MIN_CACHEABLE_TOKENS, PromptCache, count_input_tokens

from .helpers import MODEL

LONG = "You are a careful assistant. " * 300  # about 2,000 tokens


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def mark(ttl: str | None = None) -> dict[str, Any]:
    return {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}


def body(turns: int = 1, *, system_ttl: str | None = None, last_ttl: str | None = None) -> Any:
    """A conversation of ``turns`` user/assistant exchanges, breakpoints on the system prompt
    and on the newest user turn (as Tandem marks them)."""
    messages: list[dict[str, Any]] = []
    for n in range(turns):
        if n:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": f"a{n}"}]})
        messages.append({"role": "user", "content": [{"type": "text", "text": f"q{n} " * 50}]})
    messages[-1]["content"][-1]["cache_control"] = mark(last_ttl)
    system = [{"type": "text", "text": LONG, "cache_control": mark(system_ttl)}]
    return {"model": MODEL, "max_tokens": 100, "system": system, "messages": messages}


def test_it_writes_the_prefix_up_to_the_breakpoint_then_reads_it() -> None:
    cache = PromptCache(Clock())
    first, second = cache.usage(body()), cache.usage(body())
    total = count_input_tokens(body())
    assert first.cache_read_input_tokens == 0
    assert first.cache_creation_input_tokens + first.input_tokens == total
    assert first.cache_creation_input_tokens > MIN_CACHEABLE_TOKENS
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens == 0


def test_it_expires_after_five_minutes_from_the_start_of_the_request() -> None:
    clock = Clock()
    cache = PromptCache(clock)
    written = cache.usage(body()).cache_creation_input_tokens
    clock.now += 300.0
    again = cache.usage(body())
    assert again.cache_read_input_tokens == 0
    assert again.cache_creation_input_tokens == written


def test_every_hit_refreshes_the_lifetime() -> None:
    clock = Clock()
    cache = PromptCache(clock)
    cache.usage(body())
    for _ in range(4):  # 16 minutes in all, never 5 without a hit
        clock.now += 240.0
        assert cache.usage(body()).cache_read_input_tokens > 0


def test_the_one_hour_lifetime_outlives_five_minutes_and_is_reported_apart() -> None:
    clock = Clock()
    cache = PromptCache(clock)
    first = cache.usage(body(system_ttl="1h", last_ttl="1h"))
    assert first.cache_creation_1h_input_tokens == first.cache_creation_input_tokens > 0
    clock.now += 3000.0
    assert cache.usage(body(system_ttl="1h", last_ttl="1h")).cache_read_input_tokens > 0
    clock.now += 3600.0
    assert cache.usage(body(system_ttl="1h", last_ttl="1h")).cache_read_input_tokens == 0


def test_mixed_lifetimes_split_the_written_tokens() -> None:
    cache = PromptCache(Clock())
    usage = cache.usage(body(3, system_ttl="1h"))
    system_only = PromptCache(Clock()).usage(
        {**body(), "messages": [{"role": "user", "content": "hi"}]} | {"system": body()["system"]}
    )
    assert 0 < usage.cache_creation_1h_input_tokens < usage.cache_creation_input_tokens
    assert usage.cache_creation_1h_input_tokens >= system_only.cache_creation_input_tokens - 5


def test_a_breakpoint_that_moved_on_reads_the_previous_turns_entry() -> None:
    """The look-back: the newest turn's breakpoint finds the entry of the turn before."""
    cache = PromptCache(Clock())
    one = cache.usage(body(1))
    two = cache.usage(body(2))
    assert two.cache_read_input_tokens == one.cache_creation_input_tokens
    assert 0 < two.cache_creation_input_tokens < one.cache_creation_input_tokens


def test_nothing_is_cached_below_the_minimum() -> None:
    cache = PromptCache(Clock())
    short = {
        "model": MODEL,
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": mark()}]}
        ],
    }
    assert cache.usage(short).cache_creation_input_tokens == 0
    assert cache.usage(short).cache_read_input_tokens == 0


async def test_the_api_reports_writes_and_reads_with_their_lifetimes() -> None:
    sim = Simulator(tokens_per_second=0, cache=PromptCache(Clock()))
    async with make_client(sim) as client:
        first = await client.messages.create(**body(system_ttl="1h"))
        second = await client.messages.create(**body(system_ttl="1h"))
    assert isinstance(first, anthropic.types.Message)
    assert first.usage.cache_creation is not None
    assert first.usage.cache_creation.ephemeral_1h_input_tokens > 0
    assert first.usage.cache_creation.ephemeral_5m_input_tokens > 0
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens == 0
