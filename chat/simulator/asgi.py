"""The simulator as a raw ASGI app, to serve it over loopback HTTP (ANTHROPIC_BASE_URL tests).

    daphne -b 127.0.0.1 -p 8765 chat.simulator.asgi:application

A dropped-connection fault raises out of the app after the response has started, which makes the
server abort the connection: the client sees an incomplete chunked body, as with a real drop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .transport import Simulator

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class SimulatorApp:
    def __init__(self, sim: Simulator) -> None:
        self.sim = sim

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        headers = {
            key.decode("latin-1").lower(): value.decode("latin-1")
            for key, value in scope["headers"]
        }
        answer = await self.sim.respond(scope["method"], scope["path"], headers, body)
        raw_headers = [
            (k.encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers.items()
        ]
        await send({"type": "http.response.start", "status": answer.status, "headers": raw_headers})
        if isinstance(answer.body, bytes):
            await send({"type": "http.response.body", "body": answer.body})
            return
        async for chunk in answer.body:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


# A default instance for `daphne chat.simulator.asgi:application`; pace and seed are the defaults.
application = SimulatorApp(Simulator())
