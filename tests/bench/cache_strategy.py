"""Issue 13's benchmark: prompt cache hit ratio and cost per conversation, by caching strategy.

A ten-turn conversation in which the model calls tools that finish at random times (seconds
to an hour) while the user keeps writing, replayed on a fake clock (no sleeping) through
Tandem's own request builder (``chat.modelapi.history``), its keep-alive rule
(``chat.billing.cache_plan``) and the simulator's prompt cache (``chat.simulator.cache``),
priced with the default price table. Strategies:

* ``5m``: the default lifetime, nothing kept warm (before this issue);
* ``keepalive``: Tandem's default, a ``max_tokens: 0`` request shortly before the cache expires
  while a tool pends, at most ``max_keepalives()`` per wait;
* ``keepalive-uncapped``: the same without the cap (what the cap saves);
* ``1h``: every breakpoint at the 1-hour lifetime, no keep-alive.

    DJANGO_SETTINGS_MODULE=project.settings \
        .venv/bin/python -m tests.bench.cache_strategy --conversations 300 --seed 1
"""

from __future__ import annotations

import argparse
import heapq
import random
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from chat.billing import cache_plan
from chat.billing.pricing import DEFAULT_PRICES, TokenCounts, cost, counts_from_usage
from chat.modelapi import history
from chat.simulator.cache import PromptCache
from chat.simulator.core import usage_json
from chat.simulator.validator import validate_request

MODEL = "claude-sonnet-5-5"
MAX_TOOL_ROUNDS = 10  # tool rounds one user message may trigger (TANDEM_MAX_TOOL_ROUNDS)
STRATEGIES = ("5m", "keepalive", "keepalive-uncapped", "1h")
SYSTEM = "You are Tandem's assistant. Be precise, cite what tools return, and keep going. " * 90
TOOLS = [
    {
        "name": f"tool_{n}",
        "description": "A long-running research tool. " * 12,
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
    }
    for n in range(6)
]
WORDS = ["the", "of", "tandem", "cache", "prompt", "tool", "result", "budget", "token"]


@dataclass
class Tally:
    counts: TokenCounts = field(default_factory=TokenCounts)
    requests: int = 0
    keepalives: int = 0

    def add(self, usage: dict[str, Any]) -> None:
        self.counts += counts_from_usage(usage)
        self.requests += 1


@dataclass(frozen=True)
class Script:
    """What happens in one conversation, the same for every strategy."""

    prompts: list[tuple[float, str]]  # (time, text) of the ten user messages
    replies: list[tuple[int, float | None]]  # per model turn: (words, tool duration or None)


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


# Shares of quick (5 s to 2 min), medium (2 to 15 min) and long (15 to 60 min) tool runs, and
# the longest pause of the user between two messages.
MIXES: dict[str, tuple[tuple[float, float, float], float]] = {
    "long": ((0.5, 0.3, 0.2), 360.0),  # research tools, a user who takes breaks
    "short": ((0.85, 0.12, 0.03), 240.0),  # mostly quick lookups, a user who stays
}


def tool_duration(rng: random.Random, shares: tuple[float, float, float]) -> float:
    roll = rng.random()
    if roll < shares[0]:
        return rng.uniform(5, 120)
    if roll < shares[0] + shares[1]:
        return rng.uniform(120, 900)
    return rng.uniform(900, 3600)


def make_script(seed: int, turns: int = 10, mix: str = "long") -> Script:
    rng = random.Random(seed)
    shares, longest_pause = MIXES[mix]
    now, prompts = 0.0, []
    for _ in range(turns):
        prompts.append((now, _text(rng, 20, 200)))
        now += rng.uniform(20, longest_pause)  # the user writes again, tools or not
    replies = [
        (rng.randint(60, 300), tool_duration(rng, shares) if rng.random() < 0.6 else None)
        for _ in range(MAX_TOOL_ROUNDS * turns + turns)
    ]
    return Script(prompts, replies)


class Conversation:
    def __init__(self, script: Script, strategy: str) -> None:
        self.script, self.strategy = script, strategy
        self.cache_clock = [0.0]
        self.cache = PromptCache(lambda: self.cache_clock[0])
        self.thread: list[history.StoredMessage] = []
        self.pending: dict[str, float] = {}  # tool_use id -> finish time
        self.calls: dict[str, dict[str, Any]] = {}
        self.tally = Tally()
        self.replies = iter(script.replies)
        self.last_request = 0.0
        self.rounds = 0  # tool rounds since the last user message
        self.keepalives_this_wait = 0
        self.options = history.RequestOptions(
            model=MODEL,
            max_tokens=4096,
            system=SYSTEM,
            tools=TOOLS,
            cache_ttl="1h" if strategy == "1h" else "5m",
        )

    def _append(self, role: str, kind: str, content: list[dict[str, Any]]) -> None:
        seq = len(self.thread) + 1
        self.thread.append(history.StoredMessage(seq, role, kind, content))

    def _send(self, now: float, request: dict[str, Any]) -> dict[str, Any]:
        validate_request(request)  # every request Tandem would send is valid
        self.cache_clock[0] = now
        usage = usage_json(self.cache.usage(request), 0)
        self.last_request, self.keepalives_this_wait = now, 0
        return usage

    def _pending_calls(self) -> list[history.PendingCall]:
        return [history.PendingCall(i, self.calls[i]["name"]) for i in self.pending]

    def turn(self, now: float) -> list[tuple[float, str]]:
        """One model turn; returns the tool finish events it starts."""
        request = history.build_request(self.thread, self.options, self._pending_calls())
        usage = self._send(now, request)
        words, duration = next(self.replies)
        text = " ".join(WORDS[i % len(WORDS)] for i in range(words))
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        events = []
        if duration is not None and self.rounds < MAX_TOOL_ROUNDS:
            self.rounds += 1
            call_id = f"toolu_{len(self.calls):04d}"
            call = {"type": "tool_use", "id": call_id, "name": "tool_1", "input": {"q": "x"}}
            content.append(call)
            self.calls[call_id] = call
            self.pending[call_id] = now + duration
            events.append((now + duration, call_id))
        usage["output_tokens"] = words
        self.tally.add(usage)
        self._append("assistant", "reply", content)
        return events

    def user_says(self, now: float, text: str) -> list[tuple[float, str]]:
        self._append("user", "prompt", [{"type": "text", "text": text}])
        self.rounds = 0
        return self.turn(now)

    def tool_finishes(self, now: float, call_id: str) -> list[tuple[float, str]]:
        self.pending.pop(call_id)
        result = {"type": "tool_result", "tool_use_id": call_id, "content": "result " * 60}
        self._append("assistant", "tool_calls", [self.calls[call_id]])
        self._append("user", "tool_results", [result])
        return self.turn(now)

    def keep_warm_until(self, until: float) -> None:
        """Send the keep-alives Tandem's sweeper would send before ``until``."""
        if not self.strategy.startswith("keepalive"):
            return
        while self.pending:
            at = self.last_request + cache_plan.TTL_S - cache_plan.MARGIN_S
            if at >= until:
                return
            capped = self.strategy != "keepalive-uncapped"
            sent = self.keepalives_this_wait if capped else 0
            if not cache_plan.keepalive_due(
                now=at, last_request_at=self.last_request, tools_pending=True, sent=sent
            ):
                return
            request = history.build_keepalive_request(
                self.thread, self.options, self._pending_calls()
            )
            assert request is not None
            count = self.keepalives_this_wait
            self.tally.add(self._send(at, request))
            self.keepalives_this_wait = count + 1
            self.tally.keepalives += 1


def run_one(script: Script, strategy: str) -> Tally:
    conversation = Conversation(script, strategy)
    queue: list[tuple[float, int, str, str]] = []
    for order, (at, text) in enumerate(script.prompts):
        heapq.heappush(queue, (at, order, "user", text))
    order = len(script.prompts)
    while queue:
        at, _, kind, payload = heapq.heappop(queue)
        conversation.keep_warm_until(at)
        if kind == "user":
            started = conversation.user_says(at, payload)
        else:
            started = conversation.tool_finishes(at, payload)
        for finish, call_id in started:
            order += 1
            heapq.heappush(queue, (finish, order, "tool", call_id))
    return conversation.tally


@dataclass(frozen=True)
class Result:
    strategy: str
    hit_ratio: float
    cost_per_conversation: Decimal
    prompt_cost_per_conversation: Decimal
    requests: float
    keepalives: float


def run(conversations: int = 300, seed: int = 1, mix: str = "long") -> list[Result]:
    price = DEFAULT_PRICES[MODEL]
    scripts = [make_script(seed * 100_000 + n, mix=mix) for n in range(conversations)]
    results = []
    for strategy in STRATEGIES:
        tallies = [run_one(script, strategy) for script in scripts]
        total = sum((t.counts for t in tallies), TokenCounts())
        money = cost(total, price)
        prompt_only = money - total.output * price.output / 1_000_000
        results.append(
            Result(
                strategy,
                total.hit_ratio,
                money / conversations,
                prompt_only / conversations,
                sum(t.requests for t in tallies) / conversations,
                sum(t.keepalives for t in tallies) / conversations,
            )
        )
    return results


def table(results: list[Result]) -> str:
    lines = [
        f"{'strategy':<20}{'hit ratio':>10}{'$/conversation':>16}{'prompt $':>10}"
        f"{'requests':>10}{'keep-alives':>13}"
    ]
    for r in results:
        lines.append(
            f"{r.strategy:<20}{r.hit_ratio:>10.1%}{r.cost_per_conversation:>16.4f}"
            f"{r.prompt_cost_per_conversation:>10.4f}{r.requests:>10.1f}{r.keepalives:>13.1f}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mix", choices=sorted(MIXES), action="append")
    args = parser.parse_args()
    for mix in args.mix or ["long", "short"]:
        print(f"\n{mix} tools ({args.conversations} ten-turn conversations, seed {args.seed})")
        print(table(run(args.conversations, args.seed, mix)))


if __name__ == "__main__":
    main()
