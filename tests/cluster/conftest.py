"""One scale-out stack per test module (`tandem_cluster`: nginx, 2 web processes, 2 workers)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster.harness import Cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    stack = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()
