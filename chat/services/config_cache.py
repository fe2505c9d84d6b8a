"""The configuration a turn reads, kept in process memory: the owner's groups, the group
budgets, and the tools (with their schemas) the model may be offered. Tool policies are kept
the same way by ``chat.services.policy.load``.

Each value is filed under the configuration generation (``tools.config_generation`` explains
why that is never stale, in any process). A turn reads the generation once, as a column of its
first query (``turns.load_turn_input``), and hands the ``Snapshot`` to what it calls; a caller
without one passes None and pays one tiny statement (``snapshot``).

Usage is never cached here: a budget's spend is summed afresh on every call
(``GroupBudget.state``); only which budgets exist, and their limits, are kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from chat.models import GroupBudget
from tools import config_generation
from tools.config_generation import Snapshot
from tools.registry import registry

__all__ = ["Snapshot", "ToolSchemas", "budgets_by_group", "group_ids_of", "snapshot"]


def connect_receivers() -> None:
    """Changes to groups, memberships and budgets move the generation (ChatConfig.ready)."""
    memberships = get_user_model()._meta.get_field("groups").remote_field.through
    assert memberships is not None  # the auto-created table of User.groups
    config_generation.watch(Group, memberships, GroupBudget)


def snapshot(config: Snapshot | None = None) -> Snapshot:
    """The snapshot a caller was handed, else the current one (one tiny statement)."""
    return config if config is not None else config_generation.current()


def group_ids_of(user_id: int, config: Snapshot) -> frozenset[int]:
    def build() -> frozenset[int]:
        return frozenset(Group.objects.filter(user__id=user_id).values_list("pk", flat=True))

    return config.get(("group_ids", user_id), build)


def budgets_by_group(config: Snapshot) -> Mapping[int, GroupBudget]:
    """Every group budget by group id, its group loaded (shared: read, never change them)."""

    def build() -> Mapping[int, GroupBudget]:
        rows = GroupBudget.objects.select_related("group")
        return MappingProxyType({budget.group_id: budget for budget in rows})

    return config.get("group_budgets", build)


@dataclass(frozen=True)
class ToolSchemas:
    """Every tool the model may know (registered and from sources), in name order, with the
    schema it is offered with. Shared: callers copy before changing a schema."""

    names: tuple[str, ...]
    by_name: Mapping[str, Mapping[str, Any]]


def tool_schemas(config: Snapshot) -> ToolSchemas:
    def build() -> ToolSchemas:
        specs = registry.all()
        schemas = {spec.name: MappingProxyType(spec.anthropic_schema()) for spec in specs}
        return ToolSchemas(tuple(schemas), MappingProxyType(schemas))

    # Tools registered in code change only in tests (registry.temporarily): part of the key.
    return config.get(("tool_schemas", registry.version), build)
