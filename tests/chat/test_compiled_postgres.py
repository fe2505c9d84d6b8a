"""chat.compiled on PostgreSQL: its tests, and the services and queries built on it, pass there.

(PostgreSQL adapts JSON with a wrapper and datetimes as themselves, and locks rows: each a place
a compiled statement could differ from SQLite's.)"""

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

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def pg_url() -> Iterator[str]:
    with fresh_database("tandem_compiled") as url:
        yield url


def test_compiled_queries_pass_on_postgresql(pg_url: str) -> None:
    env = {**os.environ, "DATABASE_URL": pg_url, "TANDEM_EXPECT_VENDOR": "postgresql"}
    child = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/chat/test_compiled.py",
            "tests/chat/queries/test_thread.py",
            "tests/chat/queries/test_sidebar.py",
            "tests/chat/services/test_messages.py",
            "tests/chat/services/test_turns_pipeline.py",
            "tests/chat/services/test_pairing.py",
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
        timeout=600,
    )
    assert child.returncode == 0, child.stdout[-4000:] + child.stderr[-2000:]
    passed = re.search(r"(\d+) passed", child.stdout)
    assert passed and int(passed.group(1)) >= 40, child.stdout[-2000:]
    assert not re.search(r"\d+ (?:skipped|failed|error)", child.stdout), child.stdout[-2000:]
