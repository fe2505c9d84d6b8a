"""A PostgreSQL database of a test's own on the local server, dropped afterwards."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def fresh_database(prefix: str) -> Iterator[str]:
    """The URL of a new, empty database named ``<prefix>_<random>``; it (and the ``test_``
    database pytest-django may have made from it) is dropped when the block ends."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgres://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'DROP DATABASE IF EXISTS "test_{name}" WITH (FORCE)')


def pytest_on_postgresql(prefix: str, *paths: str, at_least: int) -> None:
    """Run test files again in a child pytest against a fresh PostgreSQL database of their own
    (the suite's default database is SQLite); assert that at least ``at_least`` passed there and
    that none was skipped, failed or errored. ``TANDEM_EXPECT_VENDOR`` tells a test which
    database it should find."""
    with fresh_database(prefix) as url:
        env = {**os.environ, "DATABASE_URL": url, "TANDEM_EXPECT_VENDOR": "postgresql"}
        options = ["-p", "no:cacheprovider", "-q", "-m", "not postgres", "--create-db"]
        child = subprocess.run(
            [sys.executable, "-m", "pytest", *paths, *options],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert child.returncode == 0, child.stdout[-4000:] + child.stderr[-2000:]
    passed = re.search(r"(\d+) passed", child.stdout)
    assert passed and int(passed.group(1)) >= at_least, child.stdout[-2000:]
    assert not re.search(r"\d+ (?:skipped|failed|error)", child.stdout), child.stdout[-2000:]
