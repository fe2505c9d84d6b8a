"""Pure helpers of the relay benchmark: stamped tokens, one reply's trace, the summary figures.

The fake Messages API (tests/bench/fake_api.py) streams tokens that carry their own index and
emission time, ``w<index>t<microseconds of CLOCK_MONOTONIC> ``. CLOCK_MONOTONIC is one clock
for every process of the machine, so the client computes "token emitted -> frame received"
from the text alone, and checks from the indices that every token arrived exactly once, in order.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

from tests.bench.measure import percentile

TOKEN = re.compile(r"\bw(\d+)t(\d+)\b")


def token_text(index: int, emitted_us: int) -> str:
    return f"w{index}t{emitted_us} "


def parse_tokens(text: str) -> list[tuple[int, int]]:
    """(index, emitted microseconds) of every stamped token in ``text``, in order."""
    return [(int(i), int(t)) for i, t in TOKEN.findall(text)]


def ordered_problems(indices: list[int], expected: int, *, complete: bool) -> list[str]:
    """What is wrong with a sequence of token indices: doubled, out of order, lost.

    ``complete``: all ``expected`` tokens must be there; otherwise a prefix is fine (live text
    that the final frame overtook).
    """
    problems = []
    doubled = len(indices) - len(set(indices))
    if doubled:
        problems.append(f"{doubled} tokens doubled")
    if not doubled and indices != list(range(len(indices))):
        problems.append("tokens out of order or with a gap")
    missing = expected - len(set(indices))
    if complete and missing:
        problems.append(f"{missing} of {expected} tokens lost")
    if len(set(indices)) > expected:
        problems.append(f"{len(set(indices)) - expected} tokens more than sent")
    return problems


@dataclass
class ReplyTrace:
    """What one tab saw of one reply."""

    sent_ns: int  # when the client sent the message
    live: str = ""  # the streamed text as the tab shows it (deltas appended, snapshots replace)
    final: str | None = None  # the text of the finished reply, when its frame came
    first_seen_ns: dict[int, int] = field(default_factory=dict)  # token index -> received
    emitted_us: dict[int, int] = field(default_factory=dict)
    first_text_ns: int | None = None
    frames: int = 0
    _blocks: str = ""  # the text of the finished Markdown blocks the tab shows

    def _saw(self, text: str, now_ns: int) -> None:
        for index, emitted in parse_tokens(text):
            self.emitted_us.setdefault(index, emitted)
            self.first_seen_ns.setdefault(index, now_ns)
            if self.first_text_ns is None:
                self.first_text_ns = now_ns

    def delta(self, text: str, now_ns: int) -> None:
        self.live += text
        self._saw(text, now_ns)

    def snapshot(self, text: str, now_ns: int) -> None:
        self.live = text
        self._saw(text, now_ns)

    def stream(self, finished: str, open_text: str, now_ns: int) -> None:
        """The whole stream element (Markdown): its finished blocks and its open block."""
        self._blocks = finished
        self.snapshot(finished + open_text, now_ns)

    def markdown(self, added: str, open_text: str, now_ns: int) -> None:
        """A live Markdown frame: blocks appended, the open block replaced."""
        self._blocks += added
        self.live = self._blocks + open_text
        self._saw(added + open_text, now_ns)

    def finished(self, text: str, now_ns: int) -> None:
        self.final = text
        self._saw(text, now_ns)

    def latencies_s(self) -> list[float]:
        return [
            (self.first_seen_ns[i] / 1000 - self.emitted_us[i]) / 1e6 for i in self.first_seen_ns
        ]

    def ttft_s(self) -> float | None:
        if self.first_text_ns is None:
            return None
        return (self.first_text_ns - self.sent_ns) / 1e9

    def problems(self, expected: int) -> list[str]:
        live = [i for i, _ in parse_tokens(self.live)]
        found = [f"live text: {p}" for p in ordered_problems(live, expected, complete=False)]
        if self.final is None:
            return [*found, "the reply never finished at the tab"]
        final = [i for i, _ in parse_tokens(self.final)]
        return found + [
            f"final text: {p}" for p in ordered_problems(final, expected, complete=True)
        ]


def p50_p99_ms(values_s: list[float]) -> tuple[float, float] | None:
    if not values_s:
        return None
    ms = [v * 1000 for v in values_s]
    return percentile(ms, 50), percentile(ms, 99)


def fmt_pair(pair: tuple[float, float] | None) -> str:
    if pair is None:
        return "-"
    return f"{_ms(pair[0])} / {_ms(pair[1])}"


def _ms(value: float) -> str:
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


Figures = tuple[int, str, float | None, float | None, float | None]  # N, server, relay p99 ms,
# first token p99 ms, CPU per token against the bare relay of the same repeat


def repeat_summary(figures: list[Figures]) -> str:
    """Each figure's median and range over the repeats of one N and server, as a table: the
    machine's run-to-run spread is large, so one run says little about a p99 or a ratio."""
    groups: dict[tuple[int, str], list[Figures]] = {}
    for row in figures:
        groups.setdefault((row[0], row[1]), []).append(row)
    lines = [
        "| N | server | runs | relay p99 median (range) | first token p99 median (range) "
        "| CPU/token x bare median (range) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for (n, server), rows in groups.items():
        cells = [_median_range([r[i] for r in rows], i == 4) for i in (2, 3, 4)]
        lines.append(f"| {n} | {server} | {len(rows)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _median_range(values: list[float | None], ratio: bool) -> str:
    known = sorted(v for v in values if v is not None)
    if not known:
        return "-"
    show = (lambda v: f"{v:.1f}x") if ratio else _ms
    return f"{show(statistics.median(known))} ({show(known[0])} to {show(known[-1])})"


Hops = dict[str, list[float]]  # function -> [hops, thread CPU s, wall s] (tandem_server.Counts)


def hops_between(before: Hops, after: Hops) -> Hops:
    """The database hops made between two readings of the server's counters, by function."""
    zero = [0, 0.0, 0.0]
    return {
        name: [now - then for now, then in zip(entry, before.get(name, zero), strict=True)]
        for name, entry in after.items()
        if entry[0] > before.get(name, zero)[0]
    }


Collections = dict[str, list[float]]  # "gen0".. -> [collections, total s, longest s]


def collections_between(before: Collections, after: Collections) -> Collections:
    """The garbage collections made between two readings, by generation (the server reports
    the longest since its last reading, so ``after``'s is the longest in between)."""
    zero = [0, 0.0, 0.0]
    return {
        gen: [n - before.get(gen, zero)[0], total - before.get(gen, zero)[1], longest]
        for gen, (n, total, longest) in after.items()
        if n > before.get(gen, zero)[0]
    }
