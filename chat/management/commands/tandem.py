"""`manage.py tandem`: migrate, create demo accounts on a fresh database, serve with Daphne."""

from __future__ import annotations

from typing import Any

from daphne.cli import CommandLineInterface
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from chat.modelapi.client import uses_simulator
from chat.runtime import gc_tuning
from chat.sockets import inbound

DEMO_USERS = [
    ("alice", "alice-tandem-demo", False),
    ("bob", "bob-tandem-demo", False),
    ("admin", "admin-tandem-demo", True),
]


class Command(BaseCommand):
    help = "Run Tandem: migrate, create demo accounts if none exist, serve HTTP and WebSockets."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=settings.HOST)
        parser.add_argument("--port", type=int, default=settings.PORT)
        parser.add_argument("--no-demo", action="store_true", help="Never create demo accounts.")
        parser.add_argument(
            "--no-migrate",
            action="store_true",
            help="Do not migrate (tandem_cluster migrates once for all its processes).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            has_key = bool(settings.SECRET_KEY)
        except ImproperlyConfigured:
            has_key = False
        if not has_key:
            raise CommandError("Set SECRET_KEY (or DEBUG=true for a local development run).")
        (settings.BASE_DIR / "var").mkdir(exist_ok=True)
        if not options["no_migrate"]:
            call_command("migrate", interactive=False, verbosity=0)
        if settings.TANDEM_DEMO_USERS and not options["no_demo"]:
            self._demo_users()
        host, port = options["host"], options["port"]
        mode = "the built-in simulator" if uses_simulator() else "the real API"
        self.stdout.write(f"Tandem on {mode}: open http://{host}:{port}/", ending="\n")
        self.stdout.flush()
        # Start the engine (and its start-up recovery) with the server, not on the first request:
        # a restarted server that nobody opens must still re-run or answer its tools.
        from daphne.server import twisted_loop

        from chat.runtime import engine

        # Once the loop is up (the application imported), before the engine starts its tasks:
        # start-up objects leave the collector's sight, and young collections come less often.
        twisted_loop.call_soon(gc_tuning.tune)
        twisted_loop.call_soon(engine.bind, twisted_loop)
        # Daphne drops a frame over its limit (1 MiB by default) with no answer: let it take
        # frames well past Tandem's own limit, which chat.sockets.inbound refuses with a clear
        # error.
        frame_bytes = str(inbound.server_frame_bytes(settings.TANDEM_MAX_MESSAGE_CHARS))
        CommandLineInterface().run(
            [
                *("-b", host, "-p", str(port)),
                *("--websocket-max-message-size", frame_bytes),
                *("--websocket-max-frame-size", frame_bytes),
                "project.asgi:application",
            ]
        )

    def _demo_users(self) -> None:
        for line in create_demo_users():
            self.stdout.write(line)


def create_demo_users() -> list[str]:
    """The demo accounts on a database without users; the lines that announce them."""
    User = get_user_model()
    if User.objects.exists():
        return []
    lines = ["Created demo accounts (development only):"]
    for username, password, staff in DEMO_USERS:
        if staff:
            User.objects.create_superuser(username, f"{username}@example.com", password)
        else:
            User.objects.create_user(username, f"{username}@example.com", password)
        lines.append(f"  {username} / {password}{'  (staff: /admin/)' if staff else ''}")
    return lines
