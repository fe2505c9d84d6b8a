"""tools.config_generation: every configuration change moves the token, in its own transaction,
and the per-process cache keeps a value only as long as the token stays."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from django.contrib.auth.models import Group
from django.db import connection, transaction

from tools import config_generation
from tools.config_generation import ConfigGeneration, Snapshot
from tools.mcp.models import McpServer, McpTool
from tools.models import ToolPolicy, sync_policies
from tools.registry import ToolRegistry, tool

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    config_generation.forget()
    yield
    config_generation.forget()


def moves(change: Callable[[], object]) -> bool:
    before = config_generation.read()
    change()
    return config_generation.read() != before


def calculate() -> ToolPolicy:
    return ToolPolicy.objects.get(tool_name="calculate")


def test_the_row_exists_after_migrate() -> None:
    assert config_generation.read() is not None
    assert config_generation.current().token == config_generation.read()


def test_saving_or_deleting_a_policy_moves_the_token() -> None:
    policy = calculate()
    policy.enabled = False
    assert moves(policy.save)
    assert moves(lambda: ToolPolicy.objects.create(tool_name="new_tool"))
    assert moves(ToolPolicy.objects.get(tool_name="new_tool").delete)


def test_bulk_writes_that_send_no_signal_move_the_token() -> None:
    rows = ToolPolicy.objects.filter(tool_name="calculate")
    assert moves(lambda: rows.update(approval="staff"))
    policy = calculate()
    policy.timeout_s = 5
    assert moves(lambda: ToolPolicy.objects.bulk_update([policy], ["timeout_s"]))
    assert moves(lambda: ToolPolicy.objects.bulk_create([ToolPolicy(tool_name="bulk_tool")]))


def test_many_to_many_changes_move_the_token() -> None:
    group = Group.objects.create(name="Research")
    policy, target = calculate(), ToolPolicy.objects.get(tool_name="current_time")
    assert moves(lambda: policy.allowed_groups.add(group))
    assert moves(lambda: policy.allowed_groups.remove(group))
    assert moves(lambda: policy.chain_targets.set([target]))
    assert moves(policy.chain_targets.clear)


def test_mcp_servers_and_tools_move_the_token() -> None:
    server = McpServer(name="docs", url="http://127.0.0.1:9/mcp")
    assert moves(server.save)
    assert moves(lambda: McpTool.objects.create(server=server, name="search", api_name="docs__s"))
    assert moves(lambda: McpTool.objects.filter(server=server).update(present=False))
    assert moves(lambda: McpServer.objects.filter(pk=server.pk).update(enabled=False))
    assert moves(server.delete)


def test_a_rolled_back_change_never_brings_its_token_back() -> None:
    before = config_generation.read()
    seen = []
    with pytest.raises(RuntimeError), transaction.atomic():
        ToolPolicy.objects.filter(tool_name="calculate").update(enabled=False)
        seen.append(config_generation.read())
        raise RuntimeError
    assert config_generation.read() == before
    config_generation.bump()
    assert config_generation.read() not in {before, *seen}


def test_a_missing_row_caches_nothing_and_the_next_change_recreates_it() -> None:
    ConfigGeneration.objects.all().delete()
    snapshot = config_generation.current()
    assert snapshot.token is None
    built: list[int] = []
    assert snapshot.get("key", lambda: built.append(1) or len(built)) == 1
    assert snapshot.get("key", lambda: built.append(1) or len(built)) == 2
    assert moves(lambda: sync_policies(_one_tool_registry()))
    assert config_generation.read() is not None


def _one_tool_registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tool(into=tools)
    def brand_new_tool() -> str:
        """A tool without a policy row yet."""
        return ""

    return tools


def test_a_value_is_built_once_per_token() -> None:
    builds: list[str] = []

    def build() -> tuple[str, ...]:
        builds.append("built")
        return tuple(builds)

    first = Snapshot(1)
    assert first.get("k", build) == ("built",)
    assert first.get("k", build) == ("built",)
    assert Snapshot(1).get("k", build) == ("built",)
    assert Snapshot(2).get("k", build) == ("built", "built")  # a new token starts afresh
    assert Snapshot(1).get("k", build) == ("built", "built", "built")  # and so does an old one


def test_keys_are_independent_within_a_token() -> None:
    snapshot = Snapshot(7)
    assert snapshot.get(("groups", 1), lambda: frozenset({1})) == frozenset({1})
    assert snapshot.get(("groups", 2), lambda: frozenset({2})) == frozenset({2})
    assert snapshot.get(("groups", 1), lambda: frozenset()) == frozenset({1})


def test_a_bump_from_anywhere_is_seen_by_the_next_read() -> None:
    """Another process bumps with plain SQL: only the row matters, not this process's signals."""
    snapshot = config_generation.current()
    assert snapshot.get("k", lambda: "old") == "old"
    table = ConfigGeneration._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET token = token + 1 WHERE id = 1")
    assert config_generation.current().get("k", lambda: "new") == "new"
