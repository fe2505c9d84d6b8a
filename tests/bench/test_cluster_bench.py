"""Issue 11's benchmarks as slow tests: small runs of tests/bench/cluster_bench.py."""

from __future__ import annotations

import pytest

from tests.bench.cluster_bench import run_cluster_load, run_continuation

pytestmark = [pytest.mark.slow, pytest.mark.cluster, pytest.mark.postgres, pytest.mark.redis]


def test_the_load_holds_through_nginx_on_three_web_processes() -> None:
    report = run_cluster_load(3, 2, 10, 10.0)
    print("\n" + report.text())
    assert report.holds, report.problems()


def test_it_measures_the_continuation_after_a_tool_on_a_worker() -> None:
    text = run_continuation(2, 2, 10, parallel=1)
    print("\n" + text)
    assert "finished -> first frame        n=10" in text
