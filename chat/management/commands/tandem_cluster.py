"""`manage.py tandem_cluster`: the local scale-out stack in one command (`make cluster`).

PostgreSQL (``DATABASE_URL``) and Redis (``REDIS_URL``) must already run. It migrates once,
creates the demo accounts like `make run`, starts ``--web`` Daphne processes
(`manage.py tandem`) and ``--workers`` tool workers (`manage.py tandem_worker`), and nginx in
front of them on ``HOST``:``PORT`` with the configuration rendered from
``deploy/nginx.conf.template`` into a temporary folder (nginx runs as a child process with its
own prefix, pid and temporary files, not as the system service). A child that dies is started
again after a second, as systemd's ``Restart=always`` would. Ctrl-C or SIGTERM stops them all.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from chat.management.commands.tandem import create_demo_users

TEMPLATE = Path(settings.BASE_DIR) / "deploy" / "nginx.conf.template"
WORKER_BACKEND = "tools.db_backend.DatabaseBackend"
RESTART_DELAY_S = 1.0


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def render_nginx(template: str, *, run_dir: Path, listen: str, web_ports: list[int]) -> str:
    """The nginx configuration for these web processes (placeholders ``@@NAME@@``)."""
    upstreams = "\n".join(
        f"        server 127.0.0.1:{port} max_fails=1 fail_timeout=5s;" for port in web_ports
    )
    return (
        template.replace("@@RUN_DIR@@", str(run_dir))
        .replace("@@LISTEN@@", listen)
        .replace("@@UPSTREAMS@@", upstreams)
    )


def wait_for_port(host: str, port: int, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise CommandError(f"a process exited while starting (code {process.returncode})")
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise CommandError(f"nothing listened on {host}:{port} within {timeout:g} s")


@dataclass
class Child:
    """One supervised process: how to start it, and the running one."""

    name: str
    argv: list[str]
    port: int | None = None
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start it with this process's environment (the settings every process shares)."""
        self.process = subprocess.Popen(self.argv, cwd=settings.BASE_DIR)  # noqa: S603


class Command(BaseCommand):
    help = "Run Tandem at scale locally: nginx, several web processes and tool workers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--web", type=int, default=3, help="Web (Daphne) processes.")
        parser.add_argument("--workers", type=int, default=2, help="Tool worker processes.")
        parser.add_argument("--host", default=settings.HOST, help="Where nginx listens.")
        parser.add_argument("--port", type=int, default=settings.PORT)
        parser.add_argument("--no-demo", action="store_true", help="Never create demo accounts.")
        parser.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")

    def handle(self, *args: Any, **options: Any) -> None:
        self._check(options)
        call_command("migrate", interactive=False, verbosity=0)
        if settings.TANDEM_DEMO_USERS and not options["no_demo"]:
            for line in create_demo_users():
                self.stdout.write(line)
        connection.close()  # the children have their own; this process only supervises
        manage = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py")]
        children = [
            Child(
                f"web {n}",
                [
                    *(*manage, "tandem", "--host", "127.0.0.1", "--port", str(port)),
                    *("--no-demo", "--no-migrate"),
                ],
                port=port,
            )
            for n, port in enumerate((free_port() for _ in range(options["web"])), start=1)
        ]
        children += [
            Child(f"worker {n}", [*manage, "tandem_worker"])
            for n in range(1, options["workers"] + 1)
        ]
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        with tempfile.TemporaryDirectory(prefix="tandem-nginx-") as run_dir:
            try:
                self._start(children, options, Path(run_dir))
                self._supervise(children, stop)
            finally:
                self._stop_all(children)

    def _check(self, options: dict[str, Any]) -> None:
        try:
            has_key = bool(settings.SECRET_KEY)
        except ImproperlyConfigured:
            has_key = False
        if not has_key:
            raise CommandError("Set SECRET_KEY (or DEBUG=true for a local development run).")
        if connection.vendor != "postgresql":
            raise CommandError("Set DATABASE_URL to a PostgreSQL database (postgres://...).")
        if not settings.REDIS_URL:
            raise CommandError("Set REDIS_URL (redis://...): the processes share it.")
        if settings.TASKS_BACKEND != WORKER_BACKEND:
            raise CommandError(f"Set TASKS_BACKEND={WORKER_BACKEND}: tools run on the workers.")
        if options["web"] < 1 or options["workers"] < 1:
            raise CommandError("--web and --workers must be at least 1.")
        if not Path(options["nginx"]).exists():
            raise CommandError("nginx not found: apt-get install nginx (or pass --nginx PATH).")

    def _start(self, children: list[Child], options: dict[str, Any], run_dir: Path) -> None:
        for child in children:
            child.start()
        for child in children:
            if child.port is not None and child.process is not None:
                wait_for_port("127.0.0.1", child.port, child.process, timeout=60)
        host, port = options["host"], options["port"]
        config = run_dir / "nginx.conf"
        config.write_text(
            render_nginx(
                TEMPLATE.read_text(),
                run_dir=run_dir,
                listen=f"{host}:{port}",
                web_ports=[c.port for c in children if c.port is not None],
            )
        )
        nginx = Child(
            "nginx",
            [options["nginx"], "-p", str(run_dir), "-c", str(config), "-g", "daemon off;"],
        )
        nginx.start()
        children.append(nginx)
        assert nginx.process is not None
        wait_for_port(host, port, nginx.process, timeout=30)
        for child in children:
            self._announce(child)
        self.stdout.write(f"Tandem cluster: open http://{host}:{port}/")
        self.stdout.flush()

    def _announce(self, child: Child) -> None:
        pid = child.process.pid if child.process is not None else 0
        where = f" http://127.0.0.1:{child.port}" if child.port is not None else ""
        self.stdout.write(f"cluster: {child.name} pid {pid}{where}")
        self.stdout.flush()

    def _supervise(self, children: list[Child], stop: threading.Event) -> None:
        """Start again any child that died (a crash, a SIGKILL), until asked to stop."""
        while not stop.wait(0.2):
            for child in children:
                if child.process is not None and child.process.poll() is not None:
                    self.stdout.write(f"cluster: {child.name} exited ({child.process.returncode})")
                    if stop.wait(RESTART_DELAY_S):
                        return
                    child.start()
                    self._announce(child)

    def _stop_all(self, children: list[Child]) -> None:
        running = [c.process for c in children if c.process is not None]
        for process in running:
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + 10
        for process in running:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.stdout.write("Tandem cluster stopped")
