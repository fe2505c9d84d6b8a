"""A real Tandem server process for browser and restart tests: Daphne on a free port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_process(process: subprocess.Popen[Any] | None, timeout: float = 10) -> None:
    """SIGTERM, then SIGKILL if it has not exited within ``timeout`` seconds; waits for it."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)


# Settings every test server process runs with (production mode on loopback, a fast simulator):
# the e2e live server here and the cluster's processes (tests/cluster/harness.py).
SERVER_TEST_ENV = {
    "DEBUG": "false",
    "ALLOWED_HOSTS": "127.0.0.1,localhost",
    "SESSION_COOKIE_SECURE": "false",
    "CSRF_COOKIE_SECURE": "false",
    "TANDEM_DEMO_USERS": "false",
    "SIMULATOR_TOKENS_PER_SECOND": "80",
    "TANDEM_SWEEP_INTERVAL_S": "0.5",
    "LOG_LEVEL": "WARNING",
    "PYTHONUNBUFFERED": "1",
}


@dataclass
class LiveServer:
    """Start, kill (SIGKILL) and start again a server over one database."""

    workdir: Path
    port: int = field(default_factory=free_port)
    extra_env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    _log: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def database(self) -> Path:
        return self.workdir / "live.sqlite3"

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "project.settings",
                "DATABASE_URL": f"sqlite:///{self.database}",
                "SECRET_KEY": "e2e-tests-only-secret-key-not-for-production",
                **SERVER_TEST_ENV,
            }
        )
        env.update(self.extra_env)
        return env

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stderr}")
        return done.stdout

    def create_user(self, username: str, password: str, *, staff: bool = False) -> None:
        code = (
            "from django.contrib.auth import get_user_model; U = get_user_model(); "
            f"u = U.objects.create_user({username!r}, password={password!r}); "
            f"u.is_staff = u.is_superuser = {staff!r}; u.save()"
        )
        self.manage("shell", "-c", code)

    def start(self) -> None:
        self._close_log()
        self._log = log = open(self.workdir / "server.log", "ab")  # noqa: SIM115
        self.process = subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "tandem",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--no-demo",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("server did not start in 30 s")

    def kill(self) -> None:
        """SIGKILL: no cleanup runs, as when a machine dies."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def stop(self) -> None:
        stop_process(self.process)
        self.process = None
        self._close_log()

    def log(self) -> str:
        path = self.workdir / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""
