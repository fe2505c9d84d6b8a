"""A redis-server of a test's own, on a free port, that the test may kill and start again
(never the shared one on 6379)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from tests.e2e.server import free_port, stop_process


@dataclass
class RedisServer:
    workdir: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start it (again, on the same port, empty) and wait until it answers."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [
                *("redis-server", "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--dir", str(self.workdir)),
                *("--logfile", str(self.workdir / "redis.log")),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                client = redis.Redis.from_url(self.url, socket_timeout=1)
                client.ping()
                client.close()
                return
            except redis.exceptions.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server on {self.port} did not start") from None
                time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: no shutdown, no save; everything it held is gone."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def run_id(self) -> str:
        client = redis.Redis.from_url(self.url, socket_timeout=2)
        try:
            return str(client.info("server")["run_id"])
        finally:
            client.close()

    def stop(self) -> None:
        stop_process(self.process)
