"""The relay benchmark's fake Messages API: Tandem's simulator, with stamped tokens.

    python -m tests.bench.fake_api --port 8765 --tps 30 --tokens 60

Runs the simulator's loopback ASGI app (chat/simulator/asgi.py) under Daphne in a process of
its own, so its CPU is not counted as the measured server's. Requests are checked by the
simulator exactly as usual (route, key, version, request rules); a streamed request is answered
with one text block of ``--tokens`` tokens at ``--tps`` tokens per second, each token's text
made at the moment it is sent: ``w<index>t<CLOCK_MONOTONIC microseconds> ``
(tests/bench/relay_metrics.py). Pacing follows a schedule (token i is due at start + i / tps),
so a late wake-up does not slow the whole reply down.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from daphne.cli import CommandLineInterface

from chat.simulator import Simulator
from chat.simulator.asgi import SimulatorApp
from chat.simulator.brain import Block, Reply
from chat.simulator.core import Event, SimResponse, new_id, stream_events
from chat.simulator.faults import Fault
from chat.simulator.sse import encode_event
from chat.simulator.transport import SSE_HEADERS
from tests.bench.relay_metrics import token_text

TPS_ENV, TOKENS_ENV = "BENCH_FAKE_TPS", "BENCH_FAKE_TOKENS"


class StampingSimulator(Simulator):
    def __init__(self, *, tokens_per_second: float, tokens: int) -> None:
        super().__init__(tokens_per_second=tokens_per_second)
        self.tokens = tokens

    async def _messages(
        self, body: dict[str, Any], fault: Fault | None, request_id: str
    ) -> SimResponse:
        if not body.get("stream"):
            return await super()._messages(body, fault, request_id)
        reply = Reply(blocks=(Block("text", ("",) * self.tokens),), stop_reason="end_turn")
        events = stream_events(
            reply,
            message_id=new_id("msg_01"),
            model=str(body["model"]),
            usage=self.cache.usage(body),
        )
        return SimResponse(200, dict(SSE_HEADERS), self._stamped(events))

    async def _stamped(self, events: Iterator[Event]) -> AsyncIterator[bytes]:
        delay = 1.0 / self.tokens_per_second
        start = time.monotonic()
        index = 0
        for event in events:
            if event.token:
                wait = start + index * delay - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                event.data["delta"]["text"] = token_text(index, time.monotonic_ns() // 1000)
                index += 1
            yield encode_event(event.name, event.data)


application = SimulatorApp(
    StampingSimulator(
        tokens_per_second=float(os.environ.get(TPS_ENV, "30")),
        tokens=int(os.environ.get(TOKENS_ENV, "60")),
    )
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--tps", type=float, default=30.0)
    parser.add_argument("--tokens", type=int, default=60)
    args = parser.parse_args()
    os.environ[TPS_ENV], os.environ[TOKENS_ENV] = str(args.tps), str(args.tokens)
    CommandLineInterface().run(
        ["-b", args.host, "-p", str(args.port), "-v", "0", "tests.bench.fake_api:application"]
    )


if __name__ == "__main__":
    main()
