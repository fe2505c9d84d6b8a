"""Issue 10's benchmark as a slow test: a small run, correctness only (no timing targets).

The figures are for `python -m tests.bench.relay --n 1,20,50,100`; here the bare relay and
Tandem each get a few signed-in sessions, and every tab must receive every token of every
reply exactly once, in order, with Tandem's statements counted.
"""

from __future__ import annotations

import pytest

from tests.bench.relay import parser, run

pytestmark = pytest.mark.slow


def test_every_token_reaches_every_tab_exactly_once() -> None:
    rounds = run(parser().parse_args(["--n", "1,4", "--tokens", "30", "--tps", "60"]))
    assert [(r.server, r.n) for r in rounds] == [
        ("bare", 1),
        ("Tandem", 1),
        ("bare", 4),
        ("Tandem", 4),
    ]
    for r in rounds:
        assert r.problems() == [], (r.server, r.n, r.problems()[:5])
        assert len(r.traces) == 2 * r.n
        assert r.delivered == 30 * len(r.traces)
        assert r.cpu_s > 0
    tandem = [r for r in rounds if r.server == "Tandem"]
    assert all(r.counts["queries"] > 0 and r.counts["doorbells"] > 0 for r in tandem)
