"""What one load run found, and whether Tandem's guarantees held through it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tests.bench.load_client import Client
from tests.bench.measure import percentile, summary_ms


@dataclass
class LoadReport:
    clients: int
    duration_s: float
    setup: str  # database and channel layer
    tokens_per_second: float
    samples: list[Any] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    frames: int = 0
    checks: dict[str, Any] = field(default_factory=dict)
    log_rejections: int = 0
    log_errors: int = 0
    setup_s: float = 0.0
    cold_start_s: float | None = None  # the warm-up exchange's time to first delta
    talk_s: float = 0.0
    quiet_s: float | None = None  # None: never quiet within the limit
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    workdir: str = ""  # kept database and server log, with --keep

    def add(self, client: Client) -> None:
        self.samples += client.samples
        self.failures += [f"client {client.number}: {e}" for e in client.errors]
        self.frames += client.frames

    @property
    def ttfd(self) -> list[float]:
        return [s.ttfd for s in self.samples if s.ttfd is not None]

    def p99(self) -> float:
        return percentile(self.ttfd, 99) if self.ttfd else float("inf")

    def problems(self) -> list[str]:
        c = self.checks
        found = [
            f"{len(self.failures)} client failures" if self.failures else "",
            "never quiet after the run" if self.quiet_s is None else "",
            f"{c.get('unanswered_prompts')} unanswered messages"
            if c.get("unanswered_prompts") else "",
            f"{c.get('badly_paired_count')} tool pairs not flushed exactly once"
            if c.get("badly_paired_count") else "",
            f"{c.get('unpaired_tool_uses')} tool_use without a pair"
            if c.get("unpaired_tool_uses") else "",
            f"{c.get('orphan_results')} tool_result without a pair"
            if c.get("orphan_results") else "",
            f"{c.get('rejected_by_validator')} replies refused by the validator"
            if c.get("rejected_by_validator") else "",
            f"{self.log_rejections} 400s in the server log" if self.log_rejections else "",
            f"replies not complete: {c.get('replies')}"
            if set(c.get("replies", {})) - {"complete"} else "",
            "no checks ran" if not c else "",
        ]  # fmt: skip
        return [p for p in found if p]

    @property
    def holds(self) -> bool:
        return not self.problems()

    def text(self) -> str:
        c = self.checks
        kinds = Counter(s.kind for s in self.samples)
        by_kind = "\n".join(
            f"  {k:<38} {summary_ms([s.ttfd for s in self.samples if s.kind == k and s.ttfd])}"
            for k in sorted(kinds)
        )
        idle = [s.ttfd for s in self.samples if s.idle and s.ttfd is not None]
        busy = [s.ttfd for s in self.samples if not s.idle and s.ttfd is not None]
        mix = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
        cold = "none" if self.cold_start_s is None else f"{self.cold_start_s * 1000:.0f} ms"
        span = max(0.1, self.talk_s + (self.quiet_s or 0))
        quiet = "never (limit reached)" if self.quiet_s is None else f"{self.quiet_s:.1f} s"
        lines = [
            f"== Load: {self.clients} clients for {self.duration_s:.0f} s, {self.setup}, "
            f"simulator at {self.tokens_per_second:.0f} tokens/s ==",
            f"setup (migrate, users, {self.clients} logins over HTTP, conversations): "
            f"{self.setup_s:.1f} s; talking {self.talk_s:.1f} s; quiet after the run: {quiet}",
            f"warm-up (the server's first reply, before the clients start): time to first "
            f"delta {cold}",
            f"messages sent: {len(self.samples)} ({mix}); "
            f"first deltas seen: {len(self.ttfd)}; frames received: {self.frames}",
            f"time to first delta, all:                 {summary_ms(self.ttfd)}",
            f"  sent with no reply streaming there:     {summary_ms(idle)}",
            f"  sent while a reply streamed (queued):   {summary_ms(busy)}",
            by_kind,
            f"CPU while talking and settling ({span:.1f} s): server {self.server_cpu_s:.1f} s "
            f"({self.server_cpu_s / span:.2f} cores), load clients {self.client_cpu_s:.1f} s "
            f"({self.client_cpu_s / span:.2f} cores), on one 2-core box",
            f"database: {c.get('prompts')} prompts, replies {c.get('replies')}, "
            f"{c.get('unanswered_prompts')} unanswered ({c.get('prompts_before_a_flush')} stored "
            f"just before a pair was flushed); {c.get('tool_pairs')} tool pairs "
            f"{c.get('tool_pairs_by_tool')} {c.get('tool_pairs_by_status')}; "
            f"{c.get('badly_paired_count')} not paired exactly once, "
            f"{c.get('unpaired_tool_uses')} tool_use without pair, "
            f"{c.get('orphan_results')} orphan results",
            f"refused by the simulator's validator: {c.get('rejected_by_validator')} replies "
            f"with 'The API rejected the request', {self.log_rejections} 'Error code: 400' in "
            f"the server log; server log ERROR lines: {self.log_errors}",
        ]
        if c.get("reply_errors"):
            lines.append(f"reply errors: {c['reply_errors']}")
        if self.failures:
            lines.append("client failures (first 5): " + "; ".join(self.failures[:5]))
        if self.workdir:
            lines.append(f"kept: {self.workdir} (live.sqlite3 unless PostgreSQL, server.log)")
        problems = self.problems()
        lines.append("verdict: HOLDS" if not problems else "verdict: FAILS: " + "; ".join(problems))
        return "\n".join(lines)
