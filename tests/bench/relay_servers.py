"""The relay benchmark's server processes: any server module on a loopback port, and Tandem.

Process starts ``python -m MODULE --port P`` and reads its CPU time from /proc; TandemServer is a
Tandem over its own SQLite database (tests/e2e/server.py's LiveServer environment: production
settings), its users signed in over HTTP, and its statement counts read through SIGUSR1
(tests/bench/tandem_server.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tests.bench.load import PASSWORD, PREFIX
from tests.bench.relay_client import Session, login, new_conversation
from tests.bench.tandem_server import COUNTS_ENV
from tests.e2e.server import ROOT, LiveServer, stop_process

AT_ONCE = 4  # logins and conversation creations in flight at once (setup, not measured)


@dataclass
class Process:
    """A server process on a loopback port: started, its CPU time read, stopped."""

    module: str
    port: int
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = None

    def start(self, *args: str) -> None:
        self._log = open(self.log_path, "ab")  # noqa: SIM115
        command = [sys.executable, "-m", self.module, "--port", str(self.port), *args]
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=self.env, stdout=self._log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.module} exited: {self.log_path.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"{self.module} did not start in 120 s")

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cpu_seconds(self) -> float:
        """User plus system CPU time of the process so far (Linux /proc)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        stop_process(self.process)
        if self._log is not None:
            self._log.close()


@dataclass
class TandemServer:
    """One Tandem process over its own SQLite database, with its signed-in users."""

    name: str
    live: LiveServer
    process: Process
    counts_file: Path
    cookies: list[str] = field(default_factory=list)

    @classmethod
    def create(cls, name: str, workdir: Path, env: dict[str, str]) -> TandemServer:
        workdir.mkdir(parents=True, exist_ok=True)
        counts_file = workdir / "counts.json"
        live = LiveServer(
            workdir,
            extra_env={
                **env,
                COUNTS_ENV: str(counts_file),
                "TANDEM_SWEEP_INTERVAL_S": "2.0",  # the production default
            },
        )
        process = Process("tests.bench.tandem_server", live.port, live.env, workdir / "server.log")
        return cls(name, live, process, counts_file)

    async def log_in(self, users: int) -> None:
        gate = asyncio.Semaphore(AT_ONCE)

        async def log_in(number: int) -> str:
            async with gate:
                return await login(self.process.url, f"{PREFIX}{number}", PASSWORD)

        self.cookies = list(await asyncio.gather(*(log_in(i) for i in range(users))))

    async def sessions(self, n: int, messages: int, sidebar: bool) -> list[Session]:
        gate = asyncio.Semaphore(AT_ONCE)

        async def create(cookie: str) -> int:
            async with gate:
                return await new_conversation(self.process.url, cookie)

        ids = await asyncio.gather(*(create(c) for c in self.cookies[:n]))
        return [
            Session(
                i,
                self.process.url,
                f"/ws/conversations/{cid}/",
                cookie=self.cookies[i],
                sidebar_path=f"/ws/conversations/current/{cid}/" if sidebar else "",
                messages=messages,
            )
            for i, cid in enumerate(ids)
        ]

    async def counts(self) -> dict[str, Any]:
        """Ask the process for its statement counts (SIGUSR1, tandem_server.py)."""
        before = self._read_counts().get("dumps", 0)
        os.kill(self.process.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            counts = self._read_counts()
            if counts.get("dumps", 0) > before:
                return counts
            await asyncio.sleep(0.02)
        raise RuntimeError(f"{self.name} did not write its counts")

    def _read_counts(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self.counts_file.read_text())
        except (OSError, ValueError):
            return {}
        return data
