from __future__ import annotations

from django.contrib import admin

from chat.models import Conversation, Message, ToolPair


class MessageInline(admin.TabularInline):  # type: ignore[type-arg]
    model = Message
    extra = 0
    can_delete = False
    fields = ("seq", "role", "kind", "status", "content", "stop_reason", "created_at")
    readonly_fields = fields
    ordering = ("seq",)

    def has_add_permission(self, request: object, obj: object = None) -> bool:
        return False


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("__str__", "owner", "model", "created_at", "updated_at")
    list_filter = ("model", "created_at")
    search_fields = ("title", "owner__username")
    readonly_fields = ("owner", "created_at", "updated_at", "rev", "answered_seq", "lease_owner")
    inlines = [MessageInline]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("conversation", "seq", "role", "kind", "status", "created_at")
    list_filter = ("role", "kind", "status")


@admin.register(ToolPair)
class ToolPairAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = (
        "tool_name",
        "tool_use_id",
        "conversation",
        "status",
        "requested_at",
        "flushed_at",
    )
    list_filter = ("status", "tool_name")
    search_fields = ("tool_use_id", "conversation__owner__username")
