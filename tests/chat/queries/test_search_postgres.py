"""Search on PostgreSQL: test_search.py run again, against a real server (full-text search).

The default test database is SQLite, so this runs that file in a child pytest with
``DATABASE_URL`` pointing at a database of its own on 127.0.0.1:5432 (pytest-django creates
and drops ``test_<name>`` there), and checks that every test ran on PostgreSQL and passed.
"""

from __future__ import annotations

import pytest

from tests.postgres_db import pytest_on_postgresql

pytestmark = pytest.mark.postgres


def test_search_passes_on_postgresql() -> None:
    pytest_on_postgresql("tandem_mdsearch", "tests/chat/queries/test_search.py", at_least=10)
