"""Search on PostgreSQL: test_search.py run again, against a real server (full-text search).

The default test database is SQLite, so this runs that file in a child pytest with
``DATABASE_URL`` pointing at a database of its own on 127.0.0.1:5432 (pytest-django creates
and drops ``test_<name>`` there), and checks that every test ran on PostgreSQL and passed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.postgres_db import fresh_database

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def pg_url() -> Iterator[str]:
    with fresh_database("tandem_mdsearch") as url:
        yield url


def test_search_passes_on_postgresql(pg_url: str) -> None:
    env = {**os.environ, "DATABASE_URL": pg_url, "TANDEM_EXPECT_VENDOR": "postgresql"}
    child = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/chat/queries/test_search.py",
            "-p",
            "no:cacheprovider",
            "-q",
            "-m",
            "not postgres",
            "--create-db",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stdout[-4000:] + child.stderr[-2000:]
    passed = re.search(r"(\d+) passed", child.stdout)
    assert passed and int(passed.group(1)) >= 10, child.stdout[-2000:]
    assert not re.search(r"\d+ (?:skipped|failed|error)", child.stdout), child.stdout[-2000:]
