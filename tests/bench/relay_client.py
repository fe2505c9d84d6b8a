"""One tab of the relay benchmark: a WebSocket that sends messages and traces every token.

The same client drives Tandem (a signed-in tab: its conversation socket, plus the sidebar's list
socket a page also opens) and the bare relay (one socket, no login). Each session connects and
syncs before the measured phase, then sends its messages one after another, the next when the
reply to the previous one has finished at the tab, and records a ReplyTrace per reply
(tests/bench/relay_metrics.py).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass, field

import httpx2
from websockets.asyncio.client import ClientConnection, connect

from tests.bench.measure import parse
from tests.bench.relay_metrics import ReplyTrace

WAIT_S = 120.0  # the longest one reply may take before the session counts as failed
CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
DONE = {"complete", "error", "stopped", "cancelled"}


async def login(base_url: str, username: str, password: str) -> str:
    """Log in with the real form (CSRF and all); the session's Cookie header."""
    async with httpx2.AsyncClient(base_url=base_url, timeout=300, trust_env=False) as http:
        page = await http.get("/login/")
        token = CSRF_INPUT.search(page.text)
        assert token is not None, "no CSRF token on the login page"
        form = {"username": username, "password": password, "next": "/"}
        done = await http.post("/login/", data={**form, "csrfmiddlewaretoken": token.group(1)})
        assert done.status_code == 302 and "sessionid" in http.cookies, f"login {done.status_code}"
        return "; ".join(f"{k}={v}" for k, v in http.cookies.items())


async def new_conversation(base_url: str, cookie: str) -> int:
    csrf = dict(part.split("=", 1) for part in cookie.split("; "))["csrftoken"]
    async with httpx2.AsyncClient(base_url=base_url, timeout=300, trust_env=False) as http:
        created = await http.post(
            "/conversations/new/",
            data={"csrfmiddlewaretoken": csrf},
            headers={"Cookie": cookie},
        )
    match = re.search(r"/conversations/(\d+)/", created.headers.get("location", ""))
    assert created.status_code == 302 and match, f"new conversation {created.status_code}"
    return int(match.group(1))


def article_html(raw: str, message_id: int) -> str:
    """The part of a frame that is one message's article (up to the next article)."""
    start = raw.find(f'<article id="msg-{message_id}"')
    if start < 0:
        return ""
    end = raw.find("<article ", start + 1)
    return raw[start : end if end >= 0 else len(raw)]


@dataclass
class Session:
    number: int
    base_url: str
    socket_path: str  # /ws/conversations/<id>/ for Tandem, /ws/ for the bare relay
    cookie: str = ""
    sidebar_path: str = ""  # Tandem's list socket; empty for the bare relay
    messages: int = 2
    traces: list[ReplyTrace] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    frames: int = 0
    sidebar_frames: int = 0
    _by_id: dict[int, ReplyTrace] = field(default_factory=dict)
    _current: ReplyTrace | None = None
    _current_frames: int = 0
    _assigned: bool = False  # the current trace has its reply id
    _finished: asyncio.Event = field(default_factory=asyncio.Event)
    _first_frame: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, ready: asyncio.Event, go: asyncio.Event, delay_s: float) -> None:
        """Connect and sync, set ``ready``; after ``go`` and ``delay_s``, talk."""
        ws_url = self.base_url.replace("http://", "ws://")
        options = {
            "origin": self.base_url,
            "additional_headers": {"Cookie": self.cookie} if self.cookie else {},
            "open_timeout": WAIT_S,
            "ping_interval": None,
            "compression": None,
            "proxy": None,
            "max_size": None,
        }
        try:
            async with connect(ws_url + self.socket_path, **options) as ws:  # type: ignore[arg-type]
                reader = asyncio.create_task(self._read(ws))
                sidebar = None
                if self.sidebar_path:
                    sidebar = asyncio.create_task(
                        self._sidebar(ws_url + self.sidebar_path, options)
                    )
                if self.cookie:  # Tandem's page asks for what it lacks as the socket opens
                    await ws.send(json.dumps({"type": "sync", "seq": 0, "rev": 0}))
                    async with asyncio.timeout(WAIT_S):
                        await self._first_frame.wait()
                ready.set()
                await go.wait()
                await asyncio.sleep(delay_s)
                for count in range(1, self.messages + 1):
                    if not await self._exchange(ws, count):
                        break
                reader.cancel()
                if sidebar is not None:
                    sidebar.cancel()
        except Exception as exc:  # a failed socket is a finding of the run, not a crash
            self.errors.append(f"session {self.number}: {exc!r}")
        finally:
            ready.set()

    async def _exchange(self, ws: ClientConnection, count: int) -> bool:
        self._finished.clear()
        self._current_frames = 0
        self._assigned = False
        trace = self._current = ReplyTrace(sent_ns=time.monotonic_ns())
        self.traces.append(trace)
        text = f"Session {self.number}, message {count}: tell me something."
        await ws.send(json.dumps({"type": "send", "text": text}))
        try:
            async with asyncio.timeout(WAIT_S):
                await self._finished.wait()
        except TimeoutError:
            self.errors.append(f"session {self.number}: reply {count} not finished in {WAIT_S} s")
            return False
        trace.frames = self._current_frames
        return True

    async def _read(self, ws: ClientConnection) -> None:
        try:
            async for raw in ws:
                self._frame(raw if isinstance(raw, str) else raw.decode(), time.monotonic_ns())
        except Exception as exc:
            self.errors.append(f"session {self.number}: socket {exc!r}")
            self._finished.set()

    def _frame(self, raw: str, at: int) -> None:
        self.frames += 1
        self._current_frames += 1
        self._first_frame.set()
        frame = parse(raw)
        current = self._current
        for article in frame.articles:
            known = self._by_id.get(article.id)
            if (
                article.kind == "reply"
                and known is None
                and current is not None
                and not self._assigned
                and article.id > max(self._by_id, default=0)
            ):
                self._by_id[article.id] = current
                self._assigned = True
        for message_id, finished, open_text in frame.streams:
            if message_id in self._by_id:
                self._by_id[message_id].stream(finished, open_text, at)
        for message_id, added, open_text in frame.markdown:
            if message_id in self._by_id:
                self._by_id[message_id].markdown(added, open_text, at)
        for article in frame.articles:
            trace = self._by_id.get(article.id)
            if trace is not None and article.status in DONE and trace.final is None:
                trace.finished(article_html(raw, article.id), at)
                if trace is current:
                    self._finished.set()
        if frame.error:
            self.errors.append(f"session {self.number}: error frame {frame.error!r}")

    async def _sidebar(self, url: str, options: dict[str, object]) -> None:
        try:
            async with connect(url, **options) as ws:  # type: ignore[arg-type]
                await ws.send(json.dumps({"type": "sync", "seq": 0, "rev": 0}))
                async for _raw in ws:
                    self.sidebar_frames += 1
        except Exception as exc:
            self.errors.append(f"session {self.number}: sidebar socket {exc!r}")
