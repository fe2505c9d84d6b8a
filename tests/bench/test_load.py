"""Issue 6's load benchmark as a slow test: 50 clients against one real server process.

The script itself (`python -m tests.bench.load --help`) also finds the largest N that holds and
runs on PostgreSQL and Redis.
"""

from __future__ import annotations

import pytest

from tests.bench.load import run_load

pytestmark = pytest.mark.slow


def test_it_keeps_every_guarantee_under_50_clients() -> None:
    report = run_load(50, 20.0)
    print("\n" + report.text())
    assert report.holds, report.problems()
