"""Issue 6's load benchmark: N authenticated WebSocket clients against ONE real server process.

    python -m tests.bench.load --clients 50 --duration 20
    python -m tests.bench.load --find-max          # 50, 100, 200, ... until a check fails
                                                   # or p99 passes --p99-limit
    python -m tests.bench.load --clients 50 \\
        --database-url postgres://postgres@127.0.0.1:5432/tandem_load_1 \\
        --redis-url redis://127.0.0.1:6379/7   # a Redis database of its own: the channel
                                               # layer leaves its group keys there (1 day)

It starts `manage.py tandem` (Daphne, on the simulator) over a fresh database, creates N users,
logs each in through the login form, creates a conversation each, and lets N clients talk at
random (plain questions and tool calls), measuring time to first delta. Then it waits until the
server is quiet and checks the database (tests/bench/load_checks.py). Traffic goes only to
127.0.0.1; every wait is bounded. A PostgreSQL database named in --database-url is created if
missing and dropped afterwards (only if this script created it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from tests.bench.load_client import Client, login
from tests.bench.load_report import LoadReport
from tests.e2e.server import LiveServer

PREFIX = "load"
PASSWORD = "load-bench-pass-1"
QUIET_LIMIT_S = 120.0
LOGINS_AT_ONCE = 4  # the server checks passwords one at a time anyway (PBKDF2, sync thread)
LOCAL_HOSTS = {"127.0.0.1", "localhost"}


def run_load(
    clients: int,
    duration_s: float,
    *,
    database_url: str = "",
    redis_url: str = "",
    tokens_per_second: float = 80.0,
    seed: int = 0,
    keep: bool = False,
) -> LoadReport:
    for url in (database_url, redis_url):
        host = urlsplit(url).hostname
        if url and host is not None and host not in LOCAL_HOSTS:
            raise SystemExit(f"{url}: only 127.0.0.1 is allowed")
    setup = (
        "one server process ("
        + ("PostgreSQL" if database_url.startswith("postgres") else "SQLite")
        + (" + Redis channel layer)" if redis_url else " + in-memory channel layer)")
    )
    report = LoadReport(clients, duration_s, setup, tokens_per_second)
    drop = _create_postgres_database(database_url) if database_url.startswith("postgres") else None
    with tempfile.TemporaryDirectory(prefix="tandem-load-", delete=not keep) as workdir:
        report.workdir = workdir if keep else ""
        env = {
            "SIMULATOR_TOKENS_PER_SECOND": str(tokens_per_second),
            "SIMULATOR_SEED": str(seed),
            # The clients pace themselves like people; the per-user limit has its own tests.
            "TANDEM_RATE_LIMIT_PER_MINUTE": "600",
        }
        if database_url:
            env["DATABASE_URL"] = database_url
        if redis_url:
            env["REDIS_URL"] = redis_url
        server = LiveServer(Path(workdir), extra_env=env)
        try:
            started = time.monotonic()
            server.manage("migrate", "--noinput")
            _create_users(server, clients + 1)  # one more for the warm-up
            server.start()
            asyncio.run(_drive(server, report, seed, started))
        finally:
            server.stop()
            log = server.log()
            if drop is not None:
                drop()
        report.log_rejections = log.count("Error code: 400")
        report.log_errors = sum(" ERROR " in line for line in log.splitlines())
    return report


async def _drive(server: LiveServer, report: LoadReport, seed: int, started: float) -> None:
    rng = random.Random(seed)
    gate = asyncio.Semaphore(LOGINS_AT_ONCE)

    async def log_in(number: int) -> Client:
        async with gate:
            session = await login(server.url, f"{PREFIX}{number}", PASSWORD)
        return Client(number, server.url, session, random.Random(rng.random()))

    *clients, warm = await asyncio.gather(*(log_in(n) for n in range(report.clients + 1)))
    report.setup_s = time.monotonic() - started
    report.cold_start_s = await _warm_up(warm)
    report.failures += [f"warm-up: {e}" for e in warm.errors]
    stop = asyncio.Event()
    talk_started = time.monotonic()
    server_cpu, client_cpu = _cpu_seconds(server), time.process_time()
    deadline = talk_started + report.duration_s
    tasks = [asyncio.create_task(c.run(deadline, stop)) for c in clients]
    await asyncio.wait([asyncio.create_task(c.talked.wait()) for c in clients])
    report.talk_s = time.monotonic() - talk_started
    settle_started = time.monotonic()
    report.checks = await _wait_until_quiet(server)
    if report.checks.get("quiet"):
        report.quiet_s = time.monotonic() - settle_started
    report.server_cpu_s = _cpu_seconds(server) - server_cpu
    report.client_cpu_s = time.process_time() - client_cpu
    stop.set()
    for client, outcome in zip(
        clients, await asyncio.gather(*tasks, return_exceptions=True), strict=True
    ):
        if isinstance(outcome, BaseException):
            client.errors.append(f"socket: {outcome!r}")
        report.add(client)


async def _warm_up(client: Client) -> float | None:
    """One exchange before the clients start: the server's first reply pays one-off costs."""
    stop = asyncio.Event()
    stop.set()
    await client.run(time.monotonic(), stop, at_least=1)
    return client.samples[0].ttfd if client.samples else None


async def _wait_until_quiet(server: LiveServer) -> dict[str, object]:
    """Poll the database until every reply is finished and every pair flushed (bounded)."""
    code = f"from tests.bench.load_checks import main; main({PREFIX!r})"
    limit = time.monotonic() + QUIET_LIMIT_S
    while True:
        output = await asyncio.to_thread(server.manage, "shell", "-c", code)
        checks: dict[str, object] = json.loads(output.strip().splitlines()[-1])
        if checks["quiet"] or time.monotonic() > limit:
            return checks
        await asyncio.sleep(1.0)


def _create_users(server: LiveServer, count: int) -> None:
    """N accounts sharing one password hash (hashing N times would only slow the setup)."""
    server.manage(
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model; "
        "from django.contrib.auth.hashers import make_password; "
        f"U = get_user_model(); h = make_password({PASSWORD!r}); "
        "U.objects.bulk_create("
        f"[U(username=f'{PREFIX}{{i}}', password=h) for i in range({count})])",
    )


def _cpu_seconds(server: LiveServer) -> float:
    """User plus system CPU time of the server process so far (Linux)."""
    cpu_seconds = getattr(server, "cpu_seconds", None)  # several processes (cluster_bench)
    if cpu_seconds is not None:
        return float(cpu_seconds())
    if server.process is None:
        return 0.0
    stat = Path(f"/proc/{server.process.pid}/stat").read_text()
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _create_postgres_database(url: str) -> Callable[[], None] | None:
    """Create the database named in ``url`` if missing; the returned function drops it."""
    import psycopg
    from psycopg import sql

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(scheme="postgresql", path="/postgres", query=""))
    with psycopg.connect(admin, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            return None
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))

    def drop() -> None:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))

    return drop


def find_max(start: int, cap: int, p99_limit_s: float, **options: object) -> list[LoadReport]:
    """Double N from ``start`` while the checks hold and p99 stays under the limit."""
    reports: list[LoadReport] = []
    clients = start
    while clients <= cap:
        report = run_load(clients, **options)  # type: ignore[arg-type]
        print(report.text(), flush=True)
        reports.append(report)
        if not report.holds or report.p99() > p99_limit_s:
            break
        clients *= 2
    print("\n== Summary ==")
    for r in reports:
        state = "holds" if r.holds else "FAILS"
        slow = " (p99 over the limit)" if r.holds and r.p99() > p99_limit_s else ""
        p99 = r.p99() * 1000
        print(f"N={r.clients:<4} {state}{slow}; {len(r.samples)} messages; p99 {p99:.0f} ms")
    return reports


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of talking")
    parser.add_argument("--find-max", action="store_true", help="double N until it fails")
    parser.add_argument("--max-clients", type=int, default=400, help="largest N --find-max tries")
    parser.add_argument("--p99-limit", type=float, default=10.0, help="seconds; --find-max stops")
    parser.add_argument(
        "--database-url", default="", help="default: a fresh SQLite file; PostgreSQL on 127.0.0.1"
    )
    parser.add_argument("--redis-url", default="", help="redis://127.0.0.1:6379/N only")
    parser.add_argument("--tps", type=float, default=80.0, help="simulator tokens per second")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the database and server log")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    options = {
        "duration_s": args.duration,
        "database_url": args.database_url,
        "redis_url": args.redis_url,
        "tokens_per_second": args.tps,
        "seed": args.seed,
        "keep": args.keep,
    }
    if args.find_max:
        find_max(args.clients, args.max_clients, args.p99_limit, **options)
        return
    report = run_load(args.clients, **options)  # type: ignore[arg-type]
    print(report.text())
    raise SystemExit(0 if report.holds else 1)


if __name__ == "__main__":
    main()
