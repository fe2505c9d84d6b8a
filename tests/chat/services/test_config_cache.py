"""chat.services.config_cache: a turn reads no configuration table once its cache is warm, and
every kind of admin change still takes effect on the very next turn or call."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import count
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from chat.models import Conversation, GroupBudget, Message, ToolPair, UsageRecord
from chat.services import budgets, messages, pairing, policy, turns
from tools import config_generation
from tools.config_generation import ConfigGeneration
from tools.mcp.models import McpServer, McpTool
from tools.models import ToolPolicy

pytestmark = pytest.mark.django_db

CONFIG_TABLES = ("tools_toolpolicy", "auth_group", "mcp_mcptool", "chat_groupbudget")
_ids = count(1)


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    config_generation.forget()
    yield
    config_generation.forget()


def offered(conversation: Conversation) -> set[str]:
    """The tools the next turn offers (the user writes, the turn's request is built)."""
    messages.post_user_message(conversation.pk, "which tools?")
    turn = turns.load_turn_input(conversation.pk)
    assert turn is not None
    return {str(t["name"]) for t in turn.request.get("tools", [])}  # type: ignore[attr-defined]


def call(conversation: Conversation, name: str) -> ToolPair:
    """The model calls ``name`` in a new reply to a new user message."""
    messages.post_user_message(conversation.pk, "go on")
    last = conversation.messages.order_by("-seq").values_list("seq", flat=True).first() or 0
    reply = messages.start_reply(conversation.pk, last)
    tool_input = {"expression": "1+1"} if name == "calculate" else {}
    block = {"type": "tool_use", "id": f"toolu_c{next(_ids)}", "name": name, "input": tool_input}
    return pairing.store_tool_call(conversation.pk, reply.pk, block, 0)


def tables_read(queries: CaptureQueriesContext) -> str:
    return " ".join(q["sql"] for q in queries.captured_queries)


# --- statements per turn -----------------------------------------------------------------


def test_a_warm_turn_reads_no_configuration_table(conversation: Conversation) -> None:
    offered(conversation)  # warms the cache
    budgets.exhausted(conversation.owner_id)
    messages.post_user_message(conversation.pk, "again")
    with CaptureQueriesContext(connection) as queries:
        assert turns.load_turn_input(conversation.pk) is not None
        assert budgets.exhausted(conversation.owner_id, config=config_generation.current()) is None
    sql = tables_read(queries)
    assert not [table for table in CONFIG_TABLES if f'"{table}"' in sql]
    # The generation rides on the conversation read; only `current()` above reads it alone.
    assert sql.count(ConfigGeneration._meta.db_table) == 2


def test_the_configuration_costs_five_statements_fewer_per_turn(
    conversation: Conversation, django_assert_num_queries: Any
) -> None:
    messages.post_user_message(conversation.pk, "hello")
    with CaptureQueriesContext(connection) as cold:
        turns.load_turn_input(conversation.pk)
    # Conversation (with the generation), thread, open calls, rounds since the last prompt.
    with django_assert_num_queries(4):
        turns.load_turn_input(conversation.pk)
    assert len(cold.captured_queries) == 4 + 5  # policies (+2 prefetches), groups, MCP tools


def test_begin_turn_reads_the_budgets_from_the_cache(
    conversation: Conversation, django_assert_num_queries: Any
) -> None:
    group = Group.objects.create(name="Research")
    group.user_set.add(conversation.owner)
    GroupBudget.objects.create(group=group, monthly_tokens=1_000_000)
    offered(conversation)
    budgets.exhausted(conversation.owner_id)
    with django_assert_num_queries(3):  # the generation, then the prices and this month's spend
        assert budgets.exhausted(conversation.owner_id) is None


# --- every admin change takes effect on the next turn ------------------------------------


def test_disabling_a_tool_in_admin_stops_offering_it_on_the_next_turn(
    conversation: Conversation, staff: Any
) -> None:
    assert "calculate" in offered(conversation)
    client = Client()
    client.force_login(staff)
    policy_row = ToolPolicy.objects.get(tool_name="calculate")
    page = client.post(
        reverse("admin:tools_toolpolicy_change", args=[policy_row.pk]),
        {"approval": "auto", "timeout_s": "", "may_start_chain": "on", "_save": "Save"},
    )
    assert page.status_code == 302
    assert "calculate" not in offered(conversation)
    assert call(conversation, "calculate").decision == "refused: tool disabled"


def test_a_bulk_update_of_a_policy_takes_effect_on_the_next_call(
    conversation: Conversation,
) -> None:
    assert policy.policy_for("calculate").approval == "auto"
    ToolPolicy.objects.filter(tool_name="calculate").update(approval="staff")
    assert call(conversation, "calculate").status == ToolPair.Status.AWAITING_APPROVAL
    ToolPolicy.objects.filter(tool_name="calculate").update(approval="auto")
    assert call(conversation, "calculate").status == ToolPair.Status.QUEUED


def test_group_membership_changes_take_effect_on_the_next_turn(
    conversation: Conversation, owner: Any
) -> None:
    group = Group.objects.create(name="finance")
    ToolPolicy.objects.get(tool_name="calculate").allowed_groups.add(group)
    owner.groups.add(group)
    assert "calculate" in offered(conversation)
    owner.groups.remove(group)
    assert "calculate" not in offered(conversation)
    assert call(conversation, "calculate").decision == "refused: not allowed for this user"
    group.user_set.add(owner)
    assert "calculate" in offered(conversation)
    group.user_set.clear()
    assert "calculate" not in offered(conversation)
    owner.groups.set([group])  # what the user's admin page does
    assert "calculate" in offered(conversation)
    owner.groups.set([])
    assert "calculate" not in offered(conversation)


def test_deleting_a_group_takes_effect_on_the_next_turn(
    conversation: Conversation, owner: Any
) -> None:
    group = Group.objects.create(name="finance")
    ToolPolicy.objects.get(tool_name="calculate").allowed_groups.add(group)
    owner.groups.add(group)
    assert "calculate" in offered(conversation)
    group.delete()  # the policy now names no group: everyone may use the tool again
    other = Group.objects.create(name="other")
    ToolPolicy.objects.get(tool_name="calculate").allowed_groups.add(other)
    assert "calculate" not in offered(conversation)


def test_mcp_servers_and_tools_appear_and_go_on_the_next_turn(
    conversation: Conversation,
) -> None:
    assert not {name for name in offered(conversation) if name.startswith("docs__")}
    server = McpServer.objects.create(name="docs", url="http://127.0.0.1:9/mcp")
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    tool = McpTool.objects.create(
        server=server, name="search", api_name="docs__search", input_schema=schema
    )
    assert "docs__search" in offered(conversation)
    McpServer.objects.filter(pk=server.pk).update(enabled=False)
    assert "docs__search" not in offered(conversation)
    server.enabled = True
    server.save()
    assert "docs__search" in offered(conversation)
    tool.delete()
    assert "docs__search" not in offered(conversation)
    McpTool.objects.create(server=server, name="find", api_name="docs__find", input_schema=schema)
    assert "docs__find" in offered(conversation)
    server.delete()
    assert "docs__find" not in offered(conversation)


def test_budget_changes_take_effect_on_the_next_check(owner: Any) -> None:
    group = Group.objects.create(name="Research")
    group.user_set.add(owner)
    UsageRecord.objects.create(user=owner, model="claude-sonnet-5-5", output_tokens=5_000)
    assert budgets.exhausted(owner.pk) is None  # no budget yet
    budget = GroupBudget.objects.create(group=group, monthly_tokens=5_000)
    assert budgets.exhausted(owner.pk) is not None
    budget.monthly_tokens = 50_000
    budget.save()
    assert budgets.exhausted(owner.pk) is None
    GroupBudget.objects.filter(pk=budget.pk).update(monthly_tokens=1_000)
    assert budgets.exhausted(owner.pk) is not None
    group.name = "Renamed"
    group.save()
    state = budgets.exhausted(owner.pk)
    assert state is not None and "“Renamed”" in budgets.refusal_text(state)
    budget.delete()
    assert budgets.exhausted(owner.pk) is None


def test_usage_is_never_cached(owner: Any) -> None:
    group = Group.objects.create(name="Research")
    group.user_set.add(owner)
    GroupBudget.objects.create(group=group, monthly_tokens=5_000)
    assert budgets.exhausted(owner.pk) is None
    UsageRecord.objects.create(user=owner, model="claude-sonnet-5-5", output_tokens=5_000)
    assert budgets.exhausted(owner.pk) is not None  # the same generation, a new spend


def test_a_change_made_by_another_process_takes_effect_on_the_next_turn(
    conversation: Conversation,
) -> None:
    """Another process writes with its own SQL: nothing in this process hears of it but the
    generation row, moved in the same transaction."""
    assert "calculate" in offered(conversation)
    policies, generation = ToolPolicy._meta.db_table, ConfigGeneration._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {policies} SET enabled = %s WHERE tool_name = %s", [False, "calculate"]
        )
        cursor.execute(f"UPDATE {generation} SET token = token + 1")
    assert "calculate" not in offered(conversation)
    assert Message.objects.filter(conversation=conversation).exists()
