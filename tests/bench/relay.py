"""Issue 10's benchmark: Tandem against a bare relay, side by side, N streams each.

    python -m tests.bench.relay --n 1,20,50,100 [--tps 30 --tokens 60 --messages 2 --repeat 3]

Three processes besides this one, on free loopback ports: the fake Messages API
(tests/bench/fake_api.py: the simulator with stamped tokens), the bare relay
(tests/bench/bare_relay.py) and Tandem (tests/bench/tandem_server.py: `manage.py tandem` with
statement counters; production settings: DEBUG off, SECRET_KEY set, SQLite, in-memory channel
layer). Users are created beforehand and every one logs in over HTTP once, before any round.
For each N, the bare relay then Tandem get N sessions (tests/bench/relay_client.py); each
connects and syncs, then, after a start spread over one reply's duration, sends its messages one
after another. Only that talking is the measured phase (server CPU, database counts). The table
gives relay latency (token emitted by the fake API -> frame at the client), time to first token
(send -> first text at the client), server CPU per delivered token, frames per tab per reply,
and Tandem's queries per reply and per doorbell; a round whose tabs did not each receive every
token exactly once, in order, is marked FAILS with what went wrong.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.bench.load import _create_users
from tests.bench.relay_client import Session
from tests.bench.relay_metrics import (
    Figures,
    ReplyTrace,
    collections_between,
    fmt_pair,
    hops_between,
    p50_p99_ms,
    repeat_summary,
)
from tests.bench.relay_servers import Process, TandemServer
from tests.bench.tandem_experiments import EXPERIMENT_ENV, EXPERIMENTS
from tests.e2e.server import free_port


@dataclass
class Round:
    server: str
    n: int
    tokens: int
    sessions: list[Session]
    cpu_s: float = 0.0
    wall_s: float = 0.0
    fake_cpu_s: float = 0.0  # the fake Messages API's CPU in the measured phase
    driver_cpu_s: float = 0.0  # this process's (the clients')
    counts: dict[str, int] = field(default_factory=dict)
    kinds: dict[str, int] = field(default_factory=dict)  # statements by verb and table
    hops: dict[str, list[float]] = field(default_factory=dict)  # function -> [n, CPU s, wall s]
    collections: dict[str, list[float]] = field(default_factory=dict)  # gen -> [n, s, longest s]

    @property
    def traces(self) -> list[ReplyTrace]:
        return [t for s in self.sessions for t in s.traces]

    @property
    def delivered(self) -> int:
        return sum(len(t.first_seen_ns) for t in self.traces)

    def problems(self) -> list[str]:
        found = [e for s in self.sessions for e in s.errors]
        expected = sum(s.messages for s in self.sessions)
        if len(self.traces) != expected:
            found.append(f"{len(self.traces)} replies traced of {expected}")
        for number, trace in enumerate(self.traces):
            found += [f"reply {number}: {p}" for p in trace.problems(self.tokens)]
        return found

    def cores(self) -> str:
        """CPU of the measured phase in cores: the server, the fake API, the driver."""
        wall = max(self.wall_s, 1e-9)
        return (
            f"N={self.n} {self.server}: {self.wall_s:.1f} s; cores used: server "
            f"{self.cpu_s / wall:.2f}, fake API {self.fake_cpu_s / wall:.2f}, "
            f"driver {self.driver_cpu_s / wall:.2f}; load average {load_average()}"
        )

    def statements(self, top: int = 8) -> str:
        """The most frequent statements per reply (Tandem)."""
        replies = max(1, len(self.traces))
        ranked = sorted(self.kinds.items(), key=lambda kv: -kv[1])[:top]
        return ", ".join(f"{kind} {count / replies:.1f}" for kind, count in ranked)

    def hop_costs(self, top: int = 8) -> str:
        """The database hops per reply that cost the most thread CPU (Tandem): per reply, and
        each hop's CPU and wall time in its database thread."""
        replies = max(1, len(self.traces))
        ranked = sorted(self.hops.items(), key=lambda kv: -kv[1][1])[:top]
        return ", ".join(
            f"{name} {n / replies:.1f} x {cpu / n * 1000:.2f} ms ({wall / n * 1000:.1f} ms wall)"
            for name, (n, cpu, wall) in ranked
        )

    def gc_pauses(self) -> str:
        """The garbage collections of the measured phase (Tandem), by generation."""
        if not self.collections:
            return "none"
        return ", ".join(
            f"{gen} {int(n)} x {total / n * 1000:.1f} ms (longest {longest * 1000:.1f} ms)"
            for gen, (n, total, longest) in sorted(self.collections.items())
        )

    def figures(self, bare: Round | None) -> Figures:
        """The goal's figures (relay p99, first token p99, CPU against ``bare``), for repeats."""
        relay = p50_p99_ms([v for t in self.traces for v in t.latencies_s()])
        ttft = p50_p99_ms([v for t in self.traces if (v := t.ttft_s()) is not None])
        cpu = self.cpu_per_token_ms()
        bare_cpu = bare.cpu_per_token_ms() if bare is not None else None
        ratio = cpu / bare_cpu if cpu and bare_cpu else None
        return (self.n, self.server, relay and relay[1], ttft and ttft[1], ratio)

    def cpu_per_token_ms(self) -> float | None:
        return self.cpu_s / self.delivered * 1000 if self.delivered else None

    def cells(self, bare: Round | None) -> list[str]:
        traces = self.traces
        replies = max(1, len(traces))
        latencies = [v for t in traces for v in t.latencies_s()]
        ttft = [v for t in traces if (v := t.ttft_s()) is not None]
        cpu = self.cpu_per_token_ms()
        bare_cpu = bare.cpu_per_token_ms() if bare is not None else None
        ratio = f"{cpu / bare_cpu:.1f}x" if cpu and bare_cpu else ""
        c = self.counts
        per_reply = (lambda key: f"{c[key] / replies:.1f}") if c else (lambda key: "-")
        bells = c.get("doorbells")
        per_bell = f"{c['doorbell_queries'] / bells:.2f}" if bells else "-"
        if bells and c.get("describe_queries"):  # read by the writers, for the bells to carry
            per_bell += f" +{c['describe_queries'] / bells:.2f} writer"
        carried = f"{c.get('carried', 0) / bells:.0%}" if bells else "-"
        sidebar = sum(s.sidebar_frames for s in self.sessions)
        problems = self.problems()
        return [
            str(self.n),
            self.server,
            fmt_pair(p50_p99_ms(latencies)),
            fmt_pair(p50_p99_ms(ttft)),
            f"{cpu:.2f} ms {ratio}".strip() if cpu is not None else "-",
            f"{sum(t.frames for t in traces) / replies:.1f}"
            + (f" +{sidebar / replies:.1f}" if sidebar else ""),
            per_reply("queries"),
            per_reply("writes"),
            per_reply("doorbells"),
            per_bell,
            carried,
            "ok" if not problems else f"FAILS ({len(problems)})",
        ]


HEADER = [
    "N",
    "server",
    "relay p50 / p99",
    "first token p50 / p99",
    "CPU/token",
    "frames/tab/reply",
    "queries/reply",
    "writes/reply",
    "doorbells/reply",
    "queries/doorbell",
    "taken from bell",
    "exactly once",
]


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(HEADER, widths, strict=True)) + " |"]
    lines.append("| " + " | ".join("-" * w for w in widths) + " |")
    lines += [
        "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows
    ]
    return "\n".join(lines)


class Bench:
    def __init__(self, workdir: Path, args: argparse.Namespace) -> None:
        self.args = args
        self.reply_s = args.tokens / args.tps
        fake_port = free_port()
        api_env = {
            "ANTHROPIC_API_KEY": "bench-dummy-key",
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{fake_port}",
            "NO_PROXY": "127.0.0.1,localhost",
            "PYTHONUNBUFFERED": "1",
        }
        base = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        self.fake = Process("tests.bench.fake_api", fake_port, base, workdir / "fake_api.log")
        self.bare = Process(
            "tests.bench.bare_relay", free_port(), {**base, **api_env}, workdir / "bare.log"
        )
        self.tandems = [TandemServer.create("Tandem", workdir / "tandem", api_env)]
        if args.experiment:  # the same code with a what-if patch, in the same run
            self.tandems.append(
                TandemServer.create(
                    f"Tandem+{args.experiment}",
                    workdir / "experiment",
                    {**api_env, EXPERIMENT_ENV: args.experiment},
                )
            )
        self.rounds: list[Round] = []

    def start(self) -> None:
        self.fake.start("--tps", str(self.args.tps), "--tokens", str(self.args.tokens))
        self.bare.start()
        for tandem in self.tandems:
            tandem.live.manage("migrate", "--noinput")
            _create_users(tandem.live, max(self.args.n))
            tandem.process.start()

    def stop(self) -> None:
        for process in (*(t.process for t in self.tandems), self.bare, self.fake):
            process.stop()

    async def run(self) -> list[Round]:
        for tandem in self.tandems:
            started = time.monotonic()
            await tandem.log_in(max(self.args.n))
            took = time.monotonic() - started
            print(f"{tandem.name}: {len(tandem.cookies)} logins in {took:.1f} s", flush=True)
        servers = [None, *self.tandems]
        for server in servers:  # first replies pay one-off costs (imports, caches)
            warm = await self.round(server, 1, messages=1)
            if warm.problems():
                raise RuntimeError(f"warm-up of {warm.server} failed: {warm.problems()[:3]}")
        rows: list[list[str]] = []
        figures: list[Figures] = []
        for n in self.args.n:
            for repeat in range(self.args.repeat):
                bare = await self.round(None, n)
                # The Tandem servers take turns going first: on this machine the second of
                # two rounds measured differently from the first, by as much as a change does.
                order = self.tandems if repeat % 2 == 0 else self.tandems[::-1]
                measured = {t.name: await self.round(t, n) for t in order}
                rounds = [bare] + [measured[t.name] for t in self.tandems]
                self.rounds += rounds
                rows += [bare.cells(None)] + [r.cells(bare) for r in rounds[1:]]
                figures += [bare.figures(None)] + [r.figures(bare) for r in rounds[1:]]
                print(table(rows[-len(rounds) :]), flush=True)
                for r in rounds:
                    print(f"  {r.cores()}", flush=True)
                for r in rounds[1:]:
                    top = 60 if os.environ.get("BENCH_QUERY_SITES") == "1" else 8
                    print(f"  {r.server} statements per reply: {r.statements(top)}", flush=True)
                    print(f"  {r.server} database hops per reply: {r.hop_costs()}", flush=True)
                    print(f"  {r.server} garbage collections: {r.gc_pauses()}", flush=True)
        print("\n" + table(rows), flush=True)
        if self.args.repeat > 1:
            print(f"\nover {self.args.repeat} repeats:\n{repeat_summary(figures)}", flush=True)
        return self.rounds

    async def round(
        self, tandem: TandemServer | None, n: int, *, messages: int | None = None
    ) -> Round:
        """N sessions against the bare relay (``tandem`` None) or a Tandem server."""
        messages = messages or self.args.messages
        if tandem is None:
            server, process = "bare", self.bare
            sessions = [Session(i, self.bare.url, "/ws/", messages=messages) for i in range(n)]
        else:
            server, process = tandem.name, tandem.process
            sessions = await tandem.sessions(n, messages, self.args.sidebar)
        result = Round(server, n, self.args.tokens, sessions)
        ready = [asyncio.Event() for _ in sessions]
        go = asyncio.Event()
        spread = self.reply_s * self.args.spread
        tasks = [
            asyncio.create_task(s.run(r, go, spread * i / n))
            for i, (s, r) in enumerate(zip(sessions, ready, strict=True))
        ]
        async with asyncio.timeout(300):
            await asyncio.gather(*(r.wait() for r in ready))
        await asyncio.sleep(1.0)  # connections and syncs settle before the measured phase
        counts = await tandem.counts() if tandem is not None else {}
        profiler = self.profiler(tandem, n)
        cpu, started = process.cpu_seconds(), time.monotonic()
        fake_cpu, driver_cpu = self.fake.cpu_seconds(), time.process_time()
        go.set()
        await asyncio.gather(*tasks)
        result.wall_s = time.monotonic() - started
        result.cpu_s = process.cpu_seconds() - cpu
        result.fake_cpu_s = self.fake.cpu_seconds() - fake_cpu
        result.driver_cpu_s = time.process_time() - driver_cpu
        if profiler is not None:
            profiler.send_signal(signal.SIGINT)  # py-spy writes its file on interrupt
            await asyncio.to_thread(profiler.wait, 60)
        if counts:
            assert tandem is not None
            after = await tandem.counts()
            skip = ("dumps", "kinds", "hops", "gc")
            result.counts = {k: after[k] - counts[k] for k in counts if k not in skip}
            result.hops = hops_between(counts["hops"], after["hops"])
            result.collections = collections_between(counts["gc"], after["gc"])
            result.kinds = {
                k: v - counts["kinds"].get(k, 0)
                for k, v in after["kinds"].items()
                if v > counts["kinds"].get(k, 0)
            }
        await asyncio.sleep(1.0)  # the sockets close and the server settles between rounds
        return result

    def profiler(self, tandem: TandemServer | None, n: int) -> subprocess.Popen[bytes] | None:
        """py-spy sampling a Tandem server through the measured phase, with --profile DIR."""
        if not self.args.profile or tandem is None or n not in self.args.profile_n:
            return None
        out = Path(self.args.profile) / f"{tandem.name.lower()}-n{n}.txt"
        out.parent.mkdir(parents=True, exist_ok=True)
        py_spy = Path(sys.executable).with_name("py-spy")
        command = [str(py_spy) if py_spy.exists() else "py-spy", "record", "--nonblocking"]
        command += ["--threads", "-r", "100", "-f", "raw", "-o", str(out)]
        return subprocess.Popen(
            [*command, "-p", str(tandem.process.pid)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run(args: argparse.Namespace) -> list[Round]:
    if args.sites:
        os.environ["BENCH_QUERY_SITES"] = "1"  # read by tests/bench/tandem_server.py
    with tempfile.TemporaryDirectory(prefix="tandem-relay-", delete=not args.keep) as workdir:
        print(
            f"== relay benchmark: N = {args.n}, fake API {args.tps:g} tokens/s, {args.tokens} "
            f"tokens per reply, {args.messages} messages per session, {os.cpu_count()} CPUs, "
            f"{'experiment ' + args.experiment + ', ' if args.experiment else ''}"
            f"load average {load_average()} ==",
            flush=True,
        )
        bench = Bench(Path(workdir), args)
        try:
            bench.start()
            rounds = asyncio.run(bench.run())
        finally:
            bench.stop()
            if args.keep:
                print(f"kept: {workdir}")
        print(f"load average after: {load_average()}")
        for r in rounds:
            for problem in r.problems()[:5]:
                print(f"N={r.n} {r.server}: {problem}")
        return rounds


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=lambda s: [int(x) for x in s.split(",")], default=[1, 20, 50, 100])
    p.add_argument("--tps", type=float, default=30.0, help="fake API tokens per second")
    p.add_argument("--tokens", type=int, default=60, help="tokens per reply")
    p.add_argument("--messages", type=int, default=2, help="messages per session")
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="rounds per N and server; with more, a last table gives medians and ranges",
    )
    p.add_argument(
        "--spread", type=float, default=1.0, help="session starts spread over this many replies"
    )
    p.add_argument(
        "--no-sidebar",
        dest="sidebar",
        action="store_false",
        help="Tandem tabs open only the conversation socket (a page also opens the list's)",
    )
    p.add_argument(
        "--profile", default="", help="a directory: py-spy samples Tandem's measured phases there"
    )
    p.add_argument(
        "--profile-n",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[50],
        help="the N whose Tandem round is profiled (with --profile)",
    )
    p.add_argument(
        "--experiment",
        default="",
        choices=["", *EXPERIMENTS],
        help="a what-if patch applied to the Tandem server (tests/bench/tandem_experiments.py)",
    )
    p.add_argument(
        "--sites",
        action="store_true",
        help="count statements by the app function running them too (costs CPU; not for timing)",
    )
    p.add_argument("--keep", action="store_true", help="keep the work directory (logs, database)")
    return p


def main() -> None:
    rounds = run(parser().parse_args())
    raise SystemExit(1 if any(r.problems() for r in rounds) else 0)


if __name__ == "__main__":
    main()
