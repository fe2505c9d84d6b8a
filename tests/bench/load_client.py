"""One simulated person for the load benchmark: logs in over HTTP, then talks over a WebSocket.

Each client owns one conversation. It sends a message, waits for the reply to it to finish,
pauses a little, and sends another, until its deadline. Time to first delta is measured from the
send to the first frame that shows text of a reply newer than the stored prompt (message ids
only grow, and a reply created after the prompt was stored is a reply to it), or that reply
whole if the tab fell so far behind that it was finished before the tab heard of it.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx2
from websockets.asyncio.client import ClientConnection, connect

from tests.bench.measure import parse

CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
WAIT_S = 60.0  # the longest any one step may take before it counts as a failure
PAUSE_S = (0.5, 3.0)  # a person's pause between a finished reply and the next message

MESSAGES: list[tuple[str, str, int]] = [  # (kind, text, weight)
    ("demo tool", "run the demo tool for 2 seconds", 2),
    ("time tool", "what time is it in Tokyo?", 1),
    ("calc tool", "calculate 17*23", 1),
    ("plain", "What is a haiku?", 1),
    ("plain", "How do tides work?", 1),
    ("plain", "Why is the sky blue?", 1),
    ("plain", "Give me three tips for learning Django.", 1),
]


@dataclass
class Sample:
    kind: str
    idle: bool  # no reply was streaming in the conversation when it was sent
    ttfd: float | None = None  # None: no first delta within WAIT_S


@dataclass
class Login:
    cookie: str
    conversation_id: int


async def login(base_url: str, username: str, password: str) -> Login:
    """Log in with the real form (CSRF and all), then create a conversation."""
    async with httpx2.AsyncClient(base_url=base_url, timeout=120, trust_env=False) as http:
        page = await http.get("/login/")
        token = CSRF_INPUT.search(page.text)
        assert token is not None, "no CSRF token on the login page"
        form = {"username": username, "password": password, "next": "/"}
        done = await http.post("/login/", data={**form, "csrfmiddlewaretoken": token.group(1)})
        assert done.status_code == 302 and "sessionid" in http.cookies, f"login {done.status_code}"
        # The login rotated the CSRF secret; the new cookie is a valid form token.
        created = await http.post(
            "/conversations/new/", data={"csrfmiddlewaretoken": http.cookies["csrftoken"]}
        )
        match = re.search(r"/conversations/(\d+)/", created.headers.get("location", ""))
        assert created.status_code == 302 and match, f"new conversation {created.status_code}"
        cookie = "; ".join(f"{k}={v}" for k, v in http.cookies.items())
        return Login(cookie, int(match.group(1)))


@dataclass
class Client:
    number: int
    base_url: str
    login: Login
    rng: random.Random
    samples: list[Sample] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    frames: int = 0
    last_prompt: int = 0
    streaming: set[int] = field(default_factory=set)
    finished: set[int] = field(default_factory=set)
    first_shown: dict[int, float] = field(default_factory=dict)
    error: str = ""
    talked: asyncio.Event = field(default_factory=asyncio.Event)  # done sending
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, deadline: float, stop: asyncio.Event, *, at_least: int = 0) -> None:
        """Talk until ``deadline``, then keep the socket open until ``stop`` (the tail)."""
        try:
            await self._talk(deadline, stop, at_least)
        finally:
            self.talked.set()

    async def _talk(self, deadline: float, stop: asyncio.Event, at_least: int) -> None:
        url = self.base_url.replace("http://", "ws://") + (
            f"/ws/conversations/{self.login.conversation_id}/"
        )
        async with connect(
            url,
            origin=self.base_url,  # type: ignore[arg-type]
            additional_headers={"Cookie": self.login.cookie},
            open_timeout=WAIT_S,
            ping_interval=None,
            compression=None,
            proxy=None,
            max_size=None,
        ) as ws:
            reader = asyncio.create_task(self._read(ws))
            await ws.send(json.dumps({"type": "sync", "seq": 0, "rev": 0}))
            sent = 0
            if not at_least:  # people do not all press Enter in the same millisecond
                await asyncio.sleep(self.rng.uniform(0.0, PAUSE_S[1]))
            while (time.monotonic() < deadline or sent < at_least) and not reader.done():
                sent += 1
                if not await self._exchange(ws, sent):
                    break
                pause = self.rng.uniform(*PAUSE_S)
                await asyncio.sleep(max(0.0, min(pause, deadline - time.monotonic())))
            self.talked.set()
            await stop.wait()
            reader.cancel()

    async def _exchange(self, ws: ClientConnection, count: int) -> bool:
        kinds, texts, weights = zip(*MESSAGES, strict=True)
        index = self.rng.choices(range(len(MESSAGES)), weights=weights)[0]
        # Tagged so that no two conversations send the very same request (the simulator
        # derives tool_use ids from the request, as the bench notes explain).
        text = f"Client {self.number}, message {count}: {texts[index]}"
        sample = Sample(kinds[index], idle=not self.streaming)
        self.samples.append(sample)
        before, self.error = self.last_prompt, ""
        sent_at = time.perf_counter()
        await ws.send(json.dumps({"type": "send", "text": text}))
        if not await self._wait(lambda: self.last_prompt > before or bool(self.error)):
            return self._fail(f"message {count}: not stored within {WAIT_S:.0f} s")
        if self.error:
            return self._fail(f"message {count}: {self.error}")
        prompt = self.last_prompt
        if not await self._wait(lambda: any(m > prompt for m in self.first_shown)):
            return self._fail(f"message {count}: no reply text within {WAIT_S:.0f} s")
        reply = min((m for m in self.first_shown if m > prompt), key=self.first_shown.__getitem__)
        sample.ttfd = self.first_shown[reply] - sent_at
        if not await self._wait(lambda: reply in self.finished):
            return self._fail(f"message {count}: reply not finished within {WAIT_S:.0f} s")
        return True

    def _fail(self, text: str) -> bool:
        self.errors.append(text)
        return False

    async def _wait(self, ready: Callable[[], bool]) -> bool:
        try:
            async with asyncio.timeout(WAIT_S):
                while not ready():
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            return False
        return True

    async def _read(self, ws: ClientConnection) -> None:
        try:
            async for raw in ws:
                at = time.perf_counter()
                self.frames += 1
                frame = parse(raw if isinstance(raw, str) else raw.decode())
                for article in frame.articles:
                    if article.kind == "prompt":
                        self.last_prompt = max(self.last_prompt, article.id)
                    elif article.kind == "reply" and article.status == "streaming":
                        self.streaming.add(article.id)
                    elif article.kind == "reply":
                        self.streaming.discard(article.id)
                        self.finished.add(article.id)
                        # A tab that lags behind may get the finished reply without deltas.
                        self.first_shown.setdefault(article.id, at)
                for message_id in frame.text_ids:
                    self.first_shown.setdefault(message_id, at)
                if frame.error:
                    self.error = frame.error
                self._changed.set()
        except Exception as exc:  # the socket closed under us: that is a finding, not a crash
            self.errors.append(f"socket: {exc!r}")
            self._changed.set()
