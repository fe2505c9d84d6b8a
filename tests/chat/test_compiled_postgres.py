"""chat.compiled on PostgreSQL: its tests, and the services and queries built on it, pass there.

(PostgreSQL adapts JSON with a wrapper and datetimes as themselves, and locks rows: each a place
a compiled statement could differ from SQLite's.)"""

from __future__ import annotations

import pytest

from tests.postgres_db import pytest_on_postgresql

pytestmark = pytest.mark.postgres


def test_compiled_queries_pass_on_postgresql() -> None:
    pytest_on_postgresql(
        "tandem_compiled",
        "tests/chat/test_compiled.py",
        "tests/chat/queries/test_thread.py",
        "tests/chat/queries/test_sidebar.py",
        "tests/chat/services/test_messages.py",
        "tests/chat/services/test_turns_pipeline.py",
        "tests/chat/services/test_pairing.py",
        at_least=40,
    )
