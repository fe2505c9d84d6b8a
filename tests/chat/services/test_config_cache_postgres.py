"""The configuration cache across real processes on PostgreSQL: one process keeps building turns
with its cache warm while other processes change the configuration; each change shows in its
very next turn, and a turn with nothing changed reads no configuration table."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.postgres_db import fresh_database

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[3]

# The process that builds turns: one report per line it reads (offered tools, budget, and how
# many statements of its turn read a configuration table).
TURNS = """
import sys
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from chat.models import Conversation
from chat.services import budgets, messages, turns

TABLES = ('"tools_toolpolicy"', '"auth_group"', '"mcp_mcptool"', '"chat_groupbudget"')
alice = get_user_model().objects.create_user("alice")
conversation = Conversation.objects.create(owner=alice, title="t")
for _ in sys.stdin:
    messages.post_user_message(conversation.pk, "which tools?")
    with CaptureQueriesContext(connection) as queries:
        turn = turns.load_turn_input(conversation.pk)
        over = budgets.exhausted(alice.pk, config=turn.config) is not None
    reads = sum(any(t in q["sql"] for t in TABLES) for q in queries.captured_queries)
    names = ",".join(sorted(t["name"] for t in turn.request.get("tools", [])))
    print(names, "over" if over else "under", reads, flush=True)
"""

IMPORTS = (
    "from django.contrib.auth.models import Group, User; "
    "from chat.models import GroupBudget, UsageRecord; "
    "from tools.mcp.models import McpServer, McpTool; "
    "from tools.models import ToolPolicy; "
    "calculate = ToolPolicy.objects.filter(tool_name='calculate'); "
    "alice = User.objects.get(username='alice'); "
)
CHANGES = [
    ("calculate.update(enabled=False)", "-calculate"),
    (
        "calculate.update(enabled=True); g = Group.objects.create(name='finance'); "
        "calculate.get().allowed_groups.add(g)",
        "-calculate",
    ),
    ("alice.groups.add(Group.objects.get(name='finance'))", "+calculate"),
    ("Group.objects.get(name='finance').user_set.remove(alice)", "-calculate"),
    (
        "s = McpServer.objects.create(name='docs', url='http://127.0.0.1:9/mcp'); "
        "McpTool.objects.create(server=s, name='search', api_name='docs__search')",
        "+docs__search",
    ),
    ("McpServer.objects.update(enabled=False)", "-docs__search"),
    (
        "g = Group.objects.get(name='finance'); g.user_set.add(alice); "
        "GroupBudget.objects.create(group=g, monthly_tokens=1000); "
        "UsageRecord.objects.create(user=alice, model='claude-sonnet-5-5', output_tokens=5000)",
        "over",
    ),
    (
        "b = GroupBudget.objects.get(); b.monthly_tokens = 1_000_000; b.save()",
        "under",
    ),
]


# The other process (one for all changes: a process each costs seconds): runs each line of
# code it reads after IMPORTS, in autocommit, and says "ok".
CHANGER = """
import sys
for line in sys.stdin:
    exec(IMPORTS + line)
    print("ok", flush=True)
"""


@pytest.fixture
def pg_url() -> Iterator[str]:
    with fresh_database("tandem_config") as url:
        yield url


def _env(url: str) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": url, "SECRET_KEY": "config-test", "DEBUG": "false"}


def _manage(url: str, *args: str, **popen: object) -> subprocess.Popen[str]:
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=_env(url),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **popen,
    )


def _run(url: str, *args: str) -> None:
    process = _manage(url, *args)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err


def test_changes_from_other_processes_show_in_the_next_turn(pg_url: str) -> None:
    _run(pg_url, "migrate", "--noinput")
    turns = _manage(pg_url, "shell", "--no-imports", "-c", TURNS, stdin=subprocess.PIPE)
    changer_code = f"IMPORTS = {IMPORTS!r}\n" + CHANGER
    changer = _manage(pg_url, "shell", "--no-imports", "-c", changer_code, stdin=subprocess.PIPE)
    assert turns.stdin is not None and turns.stdout is not None

    def change(code: str) -> None:
        changer.stdin.write(code + "\n")  # type: ignore[union-attr]
        changer.stdin.flush()  # type: ignore[union-attr]
        assert changer.stdout.readline().strip() == "ok", code  # type: ignore[union-attr]

    def report() -> tuple[set[str], str, int]:
        turns.stdin.write("turn\n")  # type: ignore[union-attr]
        turns.stdin.flush()  # type: ignore[union-attr]
        names, budget, reads = turns.stdout.readline().split()  # type: ignore[union-attr]
        return set(names.split(",")), budget, int(reads)

    try:
        names, budget, reads = report()
        assert "calculate" in names and budget == "under" and reads > 0  # the cache is cold
        assert report() == (names, "under", 0)  # warm: no configuration table read
        for code, expected in CHANGES:
            change(code)
            names, budget, _ = report()
            if expected.startswith(("+", "-")):
                assert (expected[1:] in names) == (expected[0] == "+"), code
            else:
                assert budget == expected, code
            assert report()[2] == 0, code  # and warm again
    finally:
        for process in (turns, changer):
            process.kill()
            process.communicate(timeout=30)
