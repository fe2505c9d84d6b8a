"""Tool policies in admin: one row per registered tool, edited in the list or on its page."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from tools.models import ToolPolicy, sync_policies
from tools.registry import registry


@admin.register(ToolPolicy)
class ToolPolicyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = (
        "tool_name",
        "registered",
        "enabled",
        "approval",
        "timeout_s",
        "approval_counts_toward_timeout",
        "may_start_chain",
        "groups",
        "leads_to",
    )
    list_editable = (
        "enabled",
        "approval",
        "timeout_s",
        "approval_counts_toward_timeout",
        "may_start_chain",
    )
    list_filter = (
        "enabled",
        "approval",
        "may_start_chain",
        "approval_counts_toward_timeout",
        "allowed_groups",
    )
    search_fields = ("tool_name",)
    filter_horizontal = ("allowed_groups", "chain_targets")
    readonly_fields = ("tool_name", "description")
    fieldsets = (
        (None, {"fields": ("tool_name", "description", "enabled", "allowed_groups")}),
        ("Running", {"fields": ("approval", "timeout_s", "approval_counts_toward_timeout")}),
        (
            "Chains",
            {
                "fields": ("may_start_chain", "chain_targets"),
                "description": "A chain is a reply that reads tool results and calls another "
                "tool right away. Such a call is allowed only if every tool whose result the "
                "reply reads may start a chain and may lead to the called tool.",
            },
        ),
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[ToolPolicy]:
        return super().get_queryset(request).prefetch_related("allowed_groups", "chain_targets")

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        sync_policies()  # a tool added since the last migrate gets its row before it is listed
        return super().changelist_view(request, extra_context)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # rows come from the registry

    def has_delete_permission(self, request: HttpRequest, obj: ToolPolicy | None = None) -> bool:
        # Deleting the row of a registered tool would silently reset it to the defaults.
        return obj is not None and not obj.is_registered and super().has_delete_permission(request)

    @admin.display(boolean=True, description="registered")
    def registered(self, obj: ToolPolicy) -> bool:
        return obj.is_registered

    @admin.display(description="groups")
    def groups(self, obj: ToolPolicy) -> str:
        return ", ".join(g.name for g in obj.allowed_groups.all()) or "everyone"

    @admin.display(description="may lead to")
    def leads_to(self, obj: ToolPolicy) -> str:
        if not obj.may_start_chain:
            return "no tool"
        return ", ".join(t.tool_name for t in obj.chain_targets.all()) or "any tool"

    @admin.display(description="description")
    def description(self, obj: ToolPolicy) -> str:
        spec = registry.get(obj.tool_name)
        return spec.description if spec else "This tool is no longer registered."
