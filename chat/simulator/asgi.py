"""The simulator as a raw ASGI app, to serve it over loopback HTTP (ANTHROPIC_BASE_URL tests).

    daphne -b 127.0.0.1 -p 8765 chat.simulator.asgi:application

A dropped-connection fault must close the TCP connection mid-body, which ASGI has no message for.
Servers such as uvicorn close the connection when the app raises after the response started, so
the app raises. Daphne 4.2 does not: it tries to send a 500 on the started response, which raises
inside its application checker (stopping that loop for good) and leaves the client waiting for its
read timeout. Under daphne the app therefore closes the connection itself, through the protocol
that daphne binds into `send` (`functools.partial(server.handle_reply, protocol)`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from .core import ConnectionDropped
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
        try:
            async for chunk in answer.body:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except ConnectionDropped:
            if not _close_daphne_connection(send):
                raise
            return
        await send({"type": "http.response.body", "body": b""})


def _close_daphne_connection(send: Send) -> bool:
    """Close the connection under daphne (see the module docstring); False elsewhere."""
    protocol = next(iter(getattr(send, "args", ())), None)
    transport = getattr(protocol, "transport", None)
    if transport is None or not hasattr(transport, "loseConnection"):
        return False
    transport.loseConnection()  # sends what is buffered, then closes: an incomplete chunked body
    return True


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def simulator_from_settings() -> Simulator:
    """A Simulator paced and seeded by Django settings when they are configured, else defaults."""
    try:
        return Simulator(
            tokens_per_second=float(settings.SIMULATOR_TOKENS_PER_SECOND),
            seed=int(settings.SIMULATOR_SEED),
        )
    except (ImproperlyConfigured, AttributeError):
        return Simulator()


# For `daphne chat.simulator.asgi:application` (set DJANGO_SETTINGS_MODULE to use its pace).
application = SimulatorApp(simulator_from_settings())
