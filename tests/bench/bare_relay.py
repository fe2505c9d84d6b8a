"""The relay benchmark's bare relay: the least a server can do to stream a reply to a socket.

    ANTHROPIC_API_KEY=dummy ANTHROPIC_BASE_URL=http://127.0.0.1:8765 \\
        python -m tests.bench.bare_relay --port 8766

A raw ASGI app under Daphne, as Tandem is: a WebSocket per tab, ``{"type": "send", "text": ...}``
asks the same SDK (``AsyncAnthropic.messages.stream``, one client per process) for a reply, and
its text deltas are coalesced as Tandem's ReplyBroadcaster does (the first at once, then one frame
per 40 ms). No login, database, channel layer or template: the frames are written by hand in the
shapes of Tandem's fragments (tests/bench/measure.py parses both): the prompt as an article, each
delta as an out-of-band span, the finished reply as an article with its whole text.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import json
import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anthropic
from daphne.cli import CommandLineInterface

Message = MutableMapping[str, Any]
Send = Callable[[Message], Awaitable[None]]
Receive = Callable[[], Awaitable[Message]]

INTERVAL_S = float(os.environ.get("TANDEM_STREAM_COALESCE_MS", "40")) / 1000
MODEL = os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-5-5")
_client: anthropic.AsyncAnthropic | None = None


def client() -> anthropic.AsyncAnthropic:
    global _client
    if _client is None:  # reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL, as Tandem's does
        _client = anthropic.AsyncAnthropic(max_retries=0)
    return _client


def article(message_id: int, kind: str, status: str, text: str = "") -> str:
    role = "user" if kind == "prompt" else "assistant"
    return (
        f'<article id="msg-{message_id}" class="msg role-{role} kind-{kind} status-{status}" '
        f'hx-swap-oob="true"><div class="body">{html.escape(text)}</div></article>'
    )


def delta(message_id: int, text: str) -> str:
    """Tandem's live Markdown frame in its cheapest form: the new text, escaped (no Markdown
    rendering), added before an empty open block; the benchmark's parser reads both alike."""
    return (
        f'<div hx-swap-oob="beforebegin:#msg-{message_id}-open">{html.escape(text)}</div>'
        f'<div id="msg-{message_id}-open" class="stream-open" hx-swap-oob="true"></div>'
    )


class Tab:
    def __init__(self, send: Send) -> None:
        self._send = send
        self.next_id = 0
        self.replies: set[asyncio.Task[None]] = set()

    async def frame(self, text: str) -> None:
        await self._send({"type": "websocket.send", "text": text})

    async def receive(self, text: str) -> None:
        frame = json.loads(text)
        if frame.get("type") != "send":
            return
        prompt, reply = self.next_id + 1, self.next_id + 2
        self.next_id += 2
        await self.frame(article(prompt, "prompt", "complete", str(frame["text"])))
        task = asyncio.get_running_loop().create_task(self.reply(reply, str(frame["text"])))
        self.replies.add(task)
        task.add_done_callback(self.replies.discard)

    async def reply(self, message_id: int, prompt: str) -> None:
        await self.frame(article(message_id, "reply", "streaming"))
        pending: list[str] = []
        first = True

        async def flush() -> None:
            if pending:
                chunk = "".join(pending)
                pending.clear()
                await self.frame(delta(message_id, chunk))

        async def tick() -> None:
            while True:
                await asyncio.sleep(INTERVAL_S)
                await flush()

        ticker = asyncio.get_running_loop().create_task(tick())
        text = ""
        try:
            request = {"role": "user", "content": prompt}
            async with client().messages.stream(
                model=MODEL, max_tokens=4096, messages=[request]
            ) as stream:
                async for event in stream:
                    if event.type == "text":
                        text += event.text
                        pending.append(event.text)
                        if first:
                            first = False
                            await flush()
        finally:
            ticker.cancel()
            await asyncio.gather(ticker, return_exceptions=True)
        await flush()
        await self.frame(article(message_id, "reply", "complete", text))


async def application(scope: Message, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    if scope["type"] != "websocket":
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    tab = Tab(send)
    while True:
        message = await receive()
        if message["type"] == "websocket.connect":
            await send({"type": "websocket.accept"})
        elif message["type"] == "websocket.receive" and message.get("text"):
            await tab.receive(message["text"])
        elif message["type"] == "websocket.disconnect":
            for task in list(tab.replies):
                task.cancel()
            return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8766)
    args = parser.parse_args()
    CommandLineInterface().run(
        ["-b", args.host, "-p", str(args.port), "-v", "0", "tests.bench.bare_relay:application"]
    )


if __name__ == "__main__":
    main()
