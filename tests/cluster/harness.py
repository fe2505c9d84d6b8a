"""The scale-out stack for tests: `manage.py tandem_cluster` on a fresh PostgreSQL database and a
Redis prefix of its own, plus the probes the tests read it with (SQL, socket tabs).

Tabs record every frame they get; tests ask about outcomes ("a frame carrying this text
arrived", "the pair is cancelled in the database"), never about a frame's exact markup, so
how live text is framed may change without breaking them.
"""

from __future__ import annotations

import asyncio
import html
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import redis
from websockets.asyncio.client import ClientConnection, connect

from tests.bench.load_client import login
from tests.e2e.server import ROOT, SERVER_TEST_ENV, free_port

PG = "postgres://postgres@127.0.0.1:5432"
REDIS_URL = "redis://127.0.0.1:6379/0"
PASSWORDS = {"alice": "alice-cluster-pass", "staff": "staff-cluster-pass"}
_ANNOUNCED = re.compile(r"^cluster: (\w+ \d+|nginx) pid (\d+)(?: (http://\S+))?$")
_TAGS = re.compile(r"<[^>]+>")


@dataclass
class Cluster:
    """One running `tandem_cluster`: the proxy's URL, each child's pid and direct URL."""

    workdir: Path
    web: int = 2
    workers: int = 2
    name: str = field(default_factory=lambda: f"tandem_scale_{uuid.uuid4().hex[:10]}")
    extra_env: dict[str, str] = field(default_factory=dict)  # more settings for every process
    port: int = field(default_factory=free_port)
    redis_url: str = REDIS_URL
    pids: dict[str, int] = field(default_factory=dict)
    urls: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    _log: Any = None
    _reader: threading.Thread | None = None
    _lines: list[str] = field(default_factory=list)
    _changed: threading.Condition = field(default_factory=threading.Condition)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def database_url(self) -> str:
        return f"{PG}/{self.name}"

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.update(
            {
                **SERVER_TEST_ENV,
                "DJANGO_SETTINGS_MODULE": "project.settings",
                "DATABASE_URL": self.database_url,
                "REDIS_URL": self.redis_url,
                "REDIS_PREFIX": self.name,
                "TASKS_BACKEND": "tools.db_backend.DatabaseBackend",
                "SECRET_KEY": "cluster-tests-only-secret-key-not-for-production",
                "TANDEM_TOOL_HEARTBEAT_EXPIRY_S": "3",
                "TANDEM_RATE_LIMIT_PER_MINUTE": "1000",
                "TANDEM_EXTRA_TOOL_MODULES": "tests.e2e.restart_tools",
                "TANDEM_WORKER_THREADS": "4",
                **self.extra_env,
            }
        )
        return env

    def start(self) -> None:
        with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.name}"')
        self._log = log = (self.workdir / "cluster.log").open("wb")
        self.process = subprocess.Popen(
            [
                *(sys.executable, "manage.py", "tandem_cluster", "--host", "127.0.0.1"),
                *("--port", str(self.port), "--web", str(self.web)),
                *("--workers", str(self.workers)),
            ],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=log,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.wait_for(lambda: any(line.startswith("Tandem cluster: open") for line in self._lines))
        for username, password in PASSWORDS.items():
            self.create_user(username, password, staff=username == "staff")

    def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for raw in self.process.stdout:
            line = raw.decode(errors="replace").rstrip()
            match = _ANNOUNCED.match(line)
            with self._changed:
                self._lines.append(line)
                if match:
                    self.pids[match.group(1)] = int(match.group(2))
                    if match.group(3):
                        self.urls[match.group(1)] = match.group(3)
                self._changed.notify_all()

    def wait_for(self, ready: Callable[[], bool], timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not ready():
                if self.process is not None and self.process.poll() is not None:
                    raise RuntimeError(f"cluster exited:\n{self.output()}")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"cluster not ready:\n{self.output()}")
                self._changed.wait(0.2)

    def output(self) -> str:
        errors = (self.workdir / "cluster.log").read_text(errors="replace")
        return "\n".join(self._lines[-40:]) + "\n--- stderr ---\n" + errors[-6000:]

    def kill(self, child: str) -> int:
        """SIGKILL one child ("web 1", "worker 2"); the cluster starts it again. Its old pid."""
        pid = self.pids[child]
        os.kill(pid, signal.SIGKILL)
        return pid

    def wait_restarted(self, child: str, old_pid: int) -> None:
        self.wait_for(lambda: self.pids.get(child) not in (None, old_pid))

    def child_of(self, runner: str) -> str:
        """The child whose pid is in an instance id (host:pid:random)."""
        pid = int(runner.split(":")[1])
        return next(name for name, p in self.pids.items() if p == pid)

    def create_user(self, username: str, password: str, *, staff: bool = False) -> None:
        self.shell(
            "from django.contrib.auth import get_user_model; U = get_user_model(); "
            f"u = U.objects.create_user({username!r}, password={password!r}); "
            f"u.is_staff = u.is_superuser = {staff!r}; u.save()"
        )

    def shell(self, code: str) -> str:
        """Run Python in `manage.py shell` with the cluster's settings; what it printed."""
        done = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", code],
            cwd=ROOT,
            env=self.env,
            check=True,
            capture_output=True,
            timeout=120,
        )
        return done.stdout.decode(errors="replace")

    def sql(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            cursor = conn.execute(query, params)  # type: ignore[arg-type]
            return list(cursor.fetchall()) if cursor.description else []

    def wait_sql(
        self,
        query: str,
        *params: Any,
        until: Callable[[list[tuple[Any, ...]]], bool],
        within: float,
    ) -> list[tuple[Any, ...]]:
        deadline = time.monotonic() + within
        while True:
            rows = self.sql(query, *params)
            if until(rows) or time.monotonic() > deadline:
                return rows
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._reader is not None:
            self._reader.join(timeout=10)
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()
        if self._log is not None:
            self._log.close()
        with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        client = redis.Redis.from_url(self.redis_url)
        try:
            keys = list(client.scan_iter(f"{self.name}*"))
            if keys:
                client.delete(*keys)
        except redis.exceptions.ConnectionError:
            pass  # a test's own Redis, already stopped
        finally:
            client.close()


def visible_text(raw: str) -> str:
    """What a frame would show: tags dropped, entities decoded."""
    return html.unescape(_TAGS.sub("", raw))


@dataclass
class Tab:
    """One browser tab of a conversation, as a socket to one web process (or the proxy)."""

    base_url: str
    cookie: str
    conversation_id: int
    frames: list[tuple[float, str]] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)  # time.time() of each raw frame
    ws: ClientConnection | None = None
    _reader: asyncio.Task[None] | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def open(self) -> Tab:
        url = (
            self.base_url.replace("http://", "ws://") + f"/ws/conversations/{self.conversation_id}/"
        )
        self.ws = await connect(
            url,
            origin=self.base_url,  # type: ignore[arg-type]
            additional_headers={"Cookie": self.cookie},
            open_timeout=30,
            ping_interval=None,
            proxy=None,
            max_size=None,
        )
        self._reader = asyncio.create_task(self._read())
        await self.send({"type": "sync", "seq": 0, "rev": 0})
        return self

    async def _read(self) -> None:
        assert self.ws is not None
        try:
            async for raw in self.ws:
                text = raw if isinstance(raw, str) else raw.decode()
                self.raw.append(text)
                self.wall.append(time.time())
                self.frames.append((time.perf_counter(), visible_text(text)))
                self._changed.set()
        except Exception:  # closed under us (a killed process): the test reconnects
            self._changed.set()

    @property
    def closed(self) -> bool:
        return self._reader is None or self._reader.done()

    async def send(self, action: dict[str, Any]) -> None:
        assert self.ws is not None
        await self.ws.send(json.dumps(action))

    def saw(self, token: str, *, since: float = 0.0) -> float | None:
        """When the frame that completed ``token`` arrived (at or after ``since``), or None.

        Text is read across frames too (live text arrives in pieces, whatever their markup)."""
        shown = ""
        for at, text in self.frames:
            if at < since:
                continue
            shown = shown[-len(token) :] + text
            if token in shown:
                return at
        return None

    async def wait_for(self, token: str, *, within: float = 30.0, since: float = 0.0) -> float:
        """Wait until a frame showing ``token`` arrives; when it did."""
        deadline = time.monotonic() + within
        while True:
            at = self.saw(token, since=since)
            if at is not None:
                return at
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.closed:
                raise AssertionError(f"no frame showed {token!r} within {within:g} s")
            self._changed.clear()
            try:
                async with asyncio.timeout(remaining):
                    await self._changed.wait()
            except TimeoutError:
                pass

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self._reader is not None:
            self._reader.cancel()


async def signed_in(base_url: str, username: str = "alice") -> tuple[str, int]:
    """Log in with the real form through ``base_url``; (cookie, a new conversation's id)."""
    done = await login(base_url, username, PASSWORDS[username])
    return done.cookie, done.conversation_id
