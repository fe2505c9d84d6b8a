"""Issue 13's benchmark as a slow test: `pytest -m slow -s tests/bench/test_cache_strategy.py`."""

from __future__ import annotations

import pytest

from tests.bench import cache_strategy

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("mix", ["long", "short"])
def test_it_reports_hit_ratio_and_cost_per_strategy(mix: str) -> None:
    results = {r.strategy: r for r in cache_strategy.run(conversations=60, seed=1, mix=mix)}
    print(f"\n{mix} tools\n" + cache_strategy.table(list(results.values())))
    baseline, keepalive = results["5m"], results["keepalive"]
    assert keepalive.hit_ratio > baseline.hit_ratio
    assert keepalive.cost_per_conversation < baseline.cost_per_conversation
    assert results["keepalive-uncapped"].keepalives >= keepalive.keepalives
    assert baseline.keepalives == results["1h"].keepalives == 0
