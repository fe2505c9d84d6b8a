"""Issue 11's benchmarks on the scale-out stack (`tandem_cluster`: nginx, web processes, workers).

    python -m tests.bench.cluster_bench load --web 1,3 --clients 40 --duration 20
    python -m tests.bench.cluster_bench continuation --web 2 --samples 40

``load`` drives issue 6's load clients (tests/bench/load.py: real logins, sockets, random
questions and tool calls, then the database checks) through nginx against 1 and 3 web
processes with 2 workers, on a fresh PostgreSQL database and a Redis prefix of its own:
messages per second and time to first delta.

``continuation`` measures what a tool finishing on a worker costs the conversation: tool
finished (the pair's ``finished_at``, written by the worker) to the first frame of the
continuation at a tab, and where that time goes: finished -> flushed by a web process (the
doorbell hop and the turn lease), flushed -> reply started (building the request), reply
started -> first frame (the model's first token and the socket). It also reports enqueue ->
start of the tools (``requested_at`` -> ``started_at``). Every wait is bounded; traffic goes
only to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.bench.load import PASSWORD, PREFIX, _drive
from tests.bench.load_report import LoadReport
from tests.bench.measure import parse, summary_ms
from tests.cluster.harness import Cluster, Tab, signed_in


class ClusterServer:
    """The parts of tests.e2e.server.LiveServer that the load driver uses, for a cluster."""

    process = None  # CPU is summed over the cluster's children instead

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.url = cluster.url

    def manage(self, *args: str) -> str:
        import subprocess
        import sys

        from tests.e2e.server import ROOT

        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.cluster.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return done.stdout

    def cpu_seconds(self) -> float:
        total = 0.0
        for pid in self.cluster.pids.values():
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return total


def run_cluster_load(web: int, workers: int, clients: int, duration_s: float) -> LoadReport:
    setup = f"nginx + {web} web processes + {workers} workers, PostgreSQL + Redis"
    report = LoadReport(clients, duration_s, setup, 80.0)
    with tempfile.TemporaryDirectory(prefix="tandem-cluster-load-") as workdir:
        cluster = Cluster(Path(workdir), web=web, workers=workers)
        try:
            started = time.monotonic()
            cluster.start()
            server = ClusterServer(cluster)
            server.manage(
                "shell",
                "-c",
                "from django.contrib.auth import get_user_model; "
                "from django.contrib.auth.hashers import make_password; "
                f"U = get_user_model(); h = make_password({PASSWORD!r}); "
                "U.objects.bulk_create("
                f"[U(username=f'{PREFIX}{{i}}', password=h) for i in range({clients + 1})])",
            )
            asyncio.run(_drive(server, report, 0, started))  # type: ignore[arg-type]
        finally:
            cluster.stop()
    return report


async def _continuations(
    cluster: Cluster, samples: int, seconds: float, parallel: int
) -> dict[str, list[float]]:
    """``samples`` conversations, each one tool call of ``seconds``, ``parallel`` at a time."""
    found: dict[str, list[float]] = {
        "finished -> first frame": [],
        "finished -> flushed": [],
        "flushed -> reply started": [],
        "reply started -> first frame": [],
        "enqueue -> start": [],
    }
    gate = asyncio.Semaphore(parallel)
    rng = random.Random(0)

    # Signed in first: a login hashes a password (a third of a second of one process's CPU),
    # which would land inside other samples.
    sessions = [await signed_in(cluster.url) for _ in range(samples)]

    async def one(number: int) -> None:
        async with gate:
            cookie, conversation_id = sessions[number]
            web = rng.choice([u for n, u in cluster.urls.items() if n.startswith("web")])
            tab = await Tab(web, cookie, conversation_id).open()
            try:
                text = f"Sample {number}: run the demo tool for {seconds:g} seconds"
                await tab.send({"type": "send", "text": text})
                await tab.wait_for("The tool_buffer_demo call finished", within=60)
                _measure(cluster, conversation_id, tab, found)
            finally:
                await tab.close()

    await asyncio.gather(*(one(n) for n in range(samples)))
    return found


def _measure(cluster: Cluster, conversation_id: int, tab: Tab, found: dict[str, Any]) -> None:
    (requested, started, finished, flushed), *_ = cluster.sql(
        "SELECT extract(epoch FROM requested_at), extract(epoch FROM started_at),"
        " extract(epoch FROM finished_at), extract(epoch FROM flushed_at)"
        " FROM chat_toolpair WHERE conversation_id = %s",
        conversation_id,
    )
    (reply_id, created), *_ = cluster.sql(
        "SELECT id, extract(epoch FROM created_at) FROM chat_message"
        " WHERE conversation_id = %s AND kind = 'reply' ORDER BY seq DESC LIMIT 1",
        conversation_id,
    )
    first = next(
        at
        for at, raw in zip(tab.wall, tab.raw, strict=True)
        if reply_id in parse(raw).text_ids or f'id="msg-{reply_id}"' in raw
    )
    found["finished -> first frame"].append(first - float(finished))
    found["finished -> flushed"].append(float(flushed) - float(finished))
    found["flushed -> reply started"].append(float(created) - float(flushed))
    found["reply started -> first frame"].append(first - float(created))
    found["enqueue -> start"].append(float(started) - float(requested))


def run_continuation(
    web: int, workers: int, samples: int, *, parallel: int = 4, seconds: float = 1.0
) -> str:
    with tempfile.TemporaryDirectory(prefix="tandem-cluster-cont-") as workdir:
        cluster = Cluster(Path(workdir), web=web, workers=workers)
        try:
            cluster.start()
            found = asyncio.run(_continuations(cluster, samples, seconds, parallel))
        finally:
            cluster.stop()
    lines = [
        f"== Continuation: {web} web processes, {workers} workers, {samples} tool calls,"
        f" {parallel} conversations at a time =="
    ]
    lines += [f"{name:<30} {summary_ms(values)}" for name, values in found.items()]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["load", "continuation"])
    parser.add_argument("--web", default="1,3", help="web processes (a list runs each)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=40)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--parallel", type=int, default=4, help="conversations at a time")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    for web in (int(n) for n in args.web.split(",")):
        if args.what == "continuation":
            print(run_continuation(web, args.workers, args.samples, parallel=args.parallel))
            continue
        report = run_cluster_load(web, args.workers, args.clients, args.duration)
        rate = len(report.ttfd) / report.talk_s if report.talk_s else 0.0
        print(report.text(), flush=True)
        print(f"messages answered per second while talking: {rate:.2f}\n", flush=True)


if __name__ == "__main__":
    main()
