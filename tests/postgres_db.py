"""A PostgreSQL database of a test's own on the local server, dropped afterwards."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


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
