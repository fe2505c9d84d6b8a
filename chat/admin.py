"""Admin for support and review: conversations and messages read-only, tool calls with actions.

Every action goes through ``chat.services`` (which rings the conversation's doorbell after
commit), so the owner's open chat shows the change at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from chat import admin_usage  # noqa: F401 - registers the usage report, prices and budgets
from chat.models import Conversation, Message, ToolPair
from chat.rendering import pretty_json
from chat.services import approvals, pairing
from chat.services.errors import NotAllowed, UserInputError

EMPTY = "—"


def pre(value: Any) -> SafeString:
    """JSON (or text) pretty-printed in a <pre>, escaped."""
    return format_html('<pre class="tandem-json">{}</pre>', pretty_json(value))


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """For support: look, never touch (no add, change or delete, even for superusers)."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class MessageInline(admin.TabularInline):  # type: ignore[type-arg]
    model = Message
    extra = 0
    can_delete = False
    fields = ("seq", "role", "kind", "status", "content_pretty", "stop_reason", "error")
    readonly_fields = fields
    ordering = ("seq",)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="content")
    def content_pretty(self, obj: Message) -> SafeString:
        return pre(obj.content)


@admin.register(Conversation)
class ConversationAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "owner", "model", "created_at", "updated_at")
    list_filter = ("model", "created_at")
    search_fields = ("title", "owner__username")
    list_select_related = ("owner",)
    fields = (
        "title",
        "owner",
        "model",
        "system_prompt",
        "thinking_budget",
        "tool_calls",
        "created_at",
        "updated_at",
        "rev",
        "answered_seq",
        "lease_owner",
        "lease_expires_at",
    )
    readonly_fields = fields
    inlines = [MessageInline]

    @admin.display(description="tool calls")
    def tool_calls(self, obj: Conversation) -> SafeString:
        url = reverse("admin:chat_toolpair_changelist") + f"?conversation__id__exact={obj.pk}"
        return format_html('<a href="{}">{} tool calls</a>', url, obj.tool_pairs.count())


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ("conversation", "seq", "role", "kind", "status", "created_at")
    list_filter = ("role", "kind", "status")
    search_fields = ("conversation__title", "conversation__owner__username")
    list_select_related = ("conversation",)
    fields = (
        "conversation",
        "seq",
        "role",
        "kind",
        "status",
        "content_pretty",
        "stop_reason",
        "usage_pretty",
        "error",
        "api_message_id",
        "superseded",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields

    @admin.display(description="content")
    def content_pretty(self, obj: Message) -> SafeString:
        return pre(obj.content)

    @admin.display(description="usage")
    def usage_pretty(self, obj: Message) -> SafeString:
        return pre(obj.usage)


class DenyForm(forms.Form):
    note = forms.CharField(
        required=False,
        max_length=approvals.NOTE_MAX,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text="Shown to the model as the reason: “Denied by <you>: <note>”.",
    )


@admin.register(ToolPair)
class ToolPairAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = (
        "tool_name",
        "user",
        "conversation",
        "status",
        "duration",
        "created",
        "flushed_at",
    )
    list_filter = ("status", "tool_name", "requested_at")
    search_fields = ("tool_use_id", "conversation__owner__username", "conversation__title")
    date_hierarchy = "requested_at"
    list_select_related = ("conversation__owner",)
    actions = ["approve_calls", "deny_calls", "cancel_calls", "retry_calls"]
    sections: tuple[tuple[str | None, tuple[str, ...]], ...] = (
        (None, ("tool_name", "tool_use_id", "status", "user", "conversation_links")),
        ("Call", ("input_pretty", "result_pretty", "is_error", "progress_text")),
        ("Decision", ("decision", "decided_by", "decided_at", "decision_note")),
        ("Times", ("requested_at", "started_at", "finished_at", "flushed_at", "deadline_at")),
        ("Runs", ("duration", "attempts", "runner")),
        ("Timeline", ("timeline_table",)),
    )
    fieldsets = tuple((title, {"fields": fields}) for title, fields in sections)
    readonly_fields = tuple(name for _, fields in sections for name in fields)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a pair is part of the thread's record; cancel it instead

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # The list's actions need it; a pair itself is never edited by hand (its page is
        # read-only, so a stale form can never overwrite what the runner wrote meanwhile).
        return obj is None and super().has_change_permission(request)

    # --- columns and fields ----------------------------------------------------------------

    @admin.display(description="user", ordering="conversation__owner__username")
    def user(self, obj: ToolPair) -> str:
        return str(obj.conversation.owner.get_username())

    @admin.display(description="created", ordering="requested_at")
    def created(self, obj: ToolPair) -> Any:
        return obj.requested_at

    @admin.display(description="duration")
    def duration(self, obj: ToolPair) -> str:
        seconds = obj.duration_s
        return EMPTY if seconds is None else f"{seconds:.1f} s"

    @admin.display(description="conversation")
    def conversation_links(self, obj: ToolPair) -> SafeString:
        conversation = obj.conversation
        return format_html(
            '<a href="{}">{}</a> · <a href="{}">chat page</a> (opens for its owner)',
            reverse("admin:chat_conversation_change", args=[conversation.pk]),
            str(conversation),
            conversation.get_absolute_url(),
        )

    @admin.display(description="input")
    def input_pretty(self, obj: ToolPair) -> SafeString:
        return pre(obj.input)

    @admin.display(description="result")
    def result_pretty(self, obj: ToolPair) -> SafeString | str:
        return EMPTY if obj.result_content is None else pre(obj.result_content)

    @admin.display(description="timeline")
    def timeline_table(self, obj: ToolPair) -> SafeString | str:
        rows = [
            (
                str(entry.get("at", "")),
                str(entry.get("event", "")),
                ", ".join(f"{k}={v}" for k, v in entry.items() if k not in ("at", "event")),
            )
            for entry in obj.timeline
            if isinstance(entry, dict)
        ]
        if not rows:
            return EMPTY
        body = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", rows)
        return format_html(
            '<table class="tandem-timeline"><thead><tr><th>at</th><th>event</th>'
            "<th>details</th></tr></thead><tbody>{}</tbody></table>",
            body,
        )

    # --- actions ---------------------------------------------------------------------------

    def _each(
        self,
        request: HttpRequest,
        queryset: QuerySet[ToolPair],
        verb: str,
        act: Callable[[int], Any],
    ) -> None:
        done, problems = 0, []
        for pk, name in queryset.values_list("pk", "tool_name"):
            try:
                result = act(pk)
            except (NotAllowed, UserInputError) as exc:
                problems.append(f"{name} #{pk}: {exc}")
                continue
            if result is None:
                problems.append(f"{name} #{pk}: it is not open any more.")
            else:
                done += 1
        if done:
            self.message_user(request, f"{verb} {done} tool call(s).", messages.SUCCESS)
        for problem in problems:
            self.message_user(request, problem, messages.WARNING)

    def has_decide_permission(self, request: HttpRequest) -> bool:
        """The approve and deny actions: the same rule as every other path to a decision."""
        return approvals.may_decide_for_staff(request.user)

    @admin.action(description="Approve selected calls", permissions=["decide"])
    def approve_calls(self, request: HttpRequest, queryset: QuerySet[ToolPair]) -> None:
        self._each(request, queryset, "Approved", lambda pk: approvals.approve(pk, request.user))

    @admin.action(description="Deny selected calls (with a note)…", permissions=["decide"])
    def deny_calls(self, request: HttpRequest, queryset: QuerySet[ToolPair]) -> Any:
        form = DenyForm(request.POST if "confirm" in request.POST else None)
        if form.is_bound and form.is_valid():
            note = form.cleaned_data["note"]
            self._each(
                request, queryset, "Denied", lambda pk: approvals.deny(pk, request.user, note)
            )
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Deny tool calls",
            "opts": self.model._meta,
            "pairs": queryset.select_related("conversation__owner"),
            "form": form,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/chat/toolpair/deny.html", context)

    @admin.action(description="Cancel selected open calls", permissions=["change"])
    def cancel_calls(self, request: HttpRequest, queryset: QuerySet[ToolPair]) -> None:
        by = str(request.user.get_username())
        self._each(request, queryset, "Cancelled", lambda pk: pairing.cancel(pk, by=by))

    @admin.action(
        description="Retry selected failed calls (not yet flushed)", permissions=["change"]
    )
    def retry_calls(self, request: HttpRequest, queryset: QuerySet[ToolPair]) -> None:
        self._each(request, queryset, "Retried", lambda pk: approvals.retry(pk, request.user))
