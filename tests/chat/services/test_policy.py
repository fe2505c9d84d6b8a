"""The policy core (pure) and the policy rows (one per registered tool)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import override_settings

from chat.models import ToolPair
from chat.services import policy
from chat.services.policy import PolicyView, judge, leads_to, plan_start, run_timeout_s, usable
from tools.models import ToolPolicy, sync_policies
from tools.registry import ToolRegistry, registry, spec_from_function


def a_tool() -> str:
    """A tool for tests."""
    return "ok"


# --- the pure core ---------------------------------------------------------------------------


def test_it_lets_everyone_use_a_tool_without_groups() -> None:
    assert usable(PolicyView("calculate"), set())


def test_it_lets_only_members_use_a_tool_with_groups() -> None:
    view = PolicyView("calculate", group_ids=frozenset({1, 2}))
    assert usable(view, {2, 9})
    assert not usable(view, {9})
    assert not usable(view, set())


def test_it_refuses_a_disabled_tool_before_anything_else() -> None:
    ruling = judge(PolicyView("calculate", enabled=False), set(), [])
    assert not ruling.allowed
    assert ruling.decision == "refused: tool disabled"
    assert "switched off" in ruling.refusal


def test_it_refuses_a_tool_the_users_groups_may_not_use() -> None:
    ruling = judge(PolicyView("calculate", group_ids=frozenset({1})), {2}, [])
    assert ruling.decision == "refused: not allowed for this user"
    assert "not available to this user" in ruling.refusal


def test_it_allows_any_tool_after_an_origin_without_targets() -> None:
    assert leads_to(PolicyView("current_time"), "calculate")
    assert judge(PolicyView("calculate"), set(), [PolicyView("current_time")]).allowed


def test_it_allows_a_chain_to_a_listed_target_only() -> None:
    origin = PolicyView("current_time", chain_targets=frozenset({"calculate"}))
    assert judge(PolicyView("calculate"), set(), [origin]).allowed
    refused = judge(PolicyView("unit_convert"), set(), [origin])
    assert refused.decision == "refused: chain current_time -> unit_convert"
    assert "tool chain rule" in refused.refusal


def test_it_refuses_every_call_after_a_tool_that_may_not_start_a_chain() -> None:
    origin = PolicyView(
        "current_time", may_start_chain=False, chain_targets=frozenset({"calculate"})
    )
    assert not judge(PolicyView("calculate"), set(), [origin]).allowed


def test_it_needs_every_origin_to_allow_the_chain() -> None:
    open_origin = PolicyView("current_time")
    closed_origin = PolicyView("unit_convert", chain_targets=frozenset({"current_time"}))
    ruling = judge(PolicyView("calculate"), set(), [open_origin, closed_origin])
    assert ruling.decision == "refused: chain unit_convert -> calculate"


def test_it_names_the_approval_a_call_waits_for() -> None:
    assert judge(PolicyView("calculate"), set(), []).decision == "allowed"
    owner = judge(PolicyView("calculate", approval="owner"), set(), [])
    staff = judge(PolicyView("calculate", approval="staff"), set(), [])
    assert (owner.decision, owner.allowed) == ("awaiting owner approval", True)
    assert (staff.decision, staff.allowed) == ("awaiting staff approval", True)


@override_settings(TANDEM_TOOL_TIMEOUT_S=300.0, TANDEM_APPROVAL_TIMEOUT_S=86400.0)
def test_it_takes_the_policy_timeout_then_the_tools_then_the_default() -> None:
    assert run_timeout_s(PolicyView("calculate", timeout_s=7)) == 7.0
    spec = registry.get("tool_buffer_demo")
    assert spec is not None and spec.timeout_s
    assert run_timeout_s(PolicyView("tool_buffer_demo")) == spec.timeout_s
    assert run_timeout_s(PolicyView("not_a_registered_tool")) == 300.0


@override_settings(TANDEM_APPROVAL_TIMEOUT_S=86400.0)
def test_it_gives_a_held_call_the_approval_timeout_unless_the_wait_counts() -> None:
    assert plan_start(PolicyView("calculate", timeout_s=60)).status == ToolPair.Status.QUEUED
    held = plan_start(PolicyView("calculate", approval="staff", timeout_s=60))
    assert (held.status, held.deadline_s) == (ToolPair.Status.AWAITING_APPROVAL, 86400.0)
    counting = PolicyView(
        "calculate", approval="owner", timeout_s=60, approval_counts_toward_timeout=True
    )
    assert plan_start(counting).deadline_s == 60.0


# --- the rows --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_it_has_a_policy_for_every_registered_tool_after_migrate() -> None:
    names = set(ToolPolicy.objects.values_list("tool_name", flat=True))
    assert set(registry.names()) <= names


@pytest.mark.django_db
def test_it_syncs_new_tools_idempotently_and_keeps_edited_rows() -> None:
    ToolPolicy.objects.filter(tool_name="calculate").update(enabled=False)
    extra = ToolRegistry()
    extra.register(spec_from_function(a_tool))
    with registry.temporarily(spec_from_function(a_tool)):
        assert sync_policies() == ["a_tool"]
        assert sync_policies() == []
    assert sync_policies(extra) == []
    assert ToolPolicy.objects.filter(tool_name="a_tool").count() == 1
    assert not ToolPolicy.objects.get(tool_name="calculate").enabled


@pytest.mark.django_db
def test_it_reads_a_missing_row_as_the_defaults() -> None:
    assert policy.load(["never_registered"]) == {"never_registered": PolicyView("never_registered")}


@pytest.mark.django_db
def test_it_loads_groups_and_chain_targets(owner: Any) -> None:
    group = Group.objects.create(name="research")
    row = ToolPolicy.objects.get(tool_name="current_time")
    row.allowed_groups.add(group)
    row.chain_targets.add(ToolPolicy.objects.get(tool_name="calculate"))
    view = policy.policy_for("current_time")
    assert view.group_ids == {group.pk}
    assert view.chain_targets == {"calculate"}
    assert "current_time" not in policy.offered_names(owner.pk, ["current_time", "calculate"])
    owner.groups.add(group)
    assert policy.offered_names(owner.pk, ["current_time", "calculate"]) == {
        "current_time",
        "calculate",
    }
