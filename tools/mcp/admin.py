"""MCP servers in admin: add one, see its tools, refresh them. The token is write-only."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from tools.mcp import catalog, client
from tools.mcp.models import McpServer, McpTool
from tools.models import ToolPolicy


class McpServerForm(forms.ModelForm):  # type: ignore[type-arg]
    token = forms.CharField(
        label="Bearer token",
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Sent as 'Authorization: Bearer ...'. Write-only: never shown again; "
        "leave empty to keep the stored one.",
    )
    clear_token = forms.BooleanField(label="Forget the stored token", required=False)

    class Meta:
        model = McpServer
        fields = ("name", "url", "token", "clear_token", "token_env", "enabled")

    listing: catalog.Listing | None = None
    failure: str = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stored_token = self.instance.token  # validation overwrites the instance's

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors or not data.get("enabled", True):
            return data
        probe = McpServer(
            name=data.get("name") or self.instance.name,
            url=data.get("url", ""),
            token=self._token(data),
            token_env=data.get("token_env", ""),
        )
        try:
            self.listing = catalog.fetch(probe)
        except client.McpFailure as exc:
            self.failure = str(exc)  # saved anyway: the page says why the server is unusable
            return data
        clashes = catalog.collisions(probe.name, self.listing)
        if clashes:
            raise forms.ValidationError(
                "Refused: the server's tools would take names already in use: "
                + "; ".join(clashes)
                + ". Choose another server name."
            )
        return data

    def _token(self, data: dict[str, Any]) -> str:
        if data.get("clear_token"):
            return ""
        return str(data.get("token") or self._stored_token or "")

    def save(self, commit: bool = True) -> McpServer:
        server: McpServer = super().save(commit=False)
        server.token = self._token(self.cleaned_data)
        if commit:
            server.save()
        return server


class McpToolInline(admin.TabularInline):  # type: ignore[type-arg]
    model = McpTool
    extra = 0
    can_delete = False
    fields = ("api_name", "description", "present", "policy")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="policy")
    def policy(self, obj: McpTool) -> str:
        row = ToolPolicy.objects.filter(tool_name=obj.api_name).first()
        if row is None:
            return "none"
        url = reverse("admin:tools_toolpolicy_change", args=[row.pk])
        state = row.get_approval_display() if row.enabled else "switched off"
        return format_html('<a href="{}">{}</a>', url, state)


@admin.register(McpServer)
class McpServerAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    form = McpServerForm
    inlines = [McpToolInline]
    list_display = ("name", "url", "enabled", "refresh_ok", "refreshed_at", "tool_count")
    list_filter = ("enabled", "refresh_ok")
    search_fields = ("name", "url")
    actions = ["refresh_tools"]
    readonly_fields = ("token_stored", "refreshed_at", "refresh_status_shown")

    def get_fields(self, request: HttpRequest, obj: McpServer | None = None) -> Any:
        fields = ["name", "url", "token", "clear_token", "token_env", "enabled"]
        if obj is not None:
            fields[2:2] = ["token_stored"]
            fields += ["refreshed_at", "refresh_status_shown"]
            if not self.has_change_permission(request, obj):
                # A read-only page would print the stored token as text: never show it.
                fields = [f for f in fields if f not in ("token", "clear_token")]
        return fields

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # Renaming would rename every tool the model knows: add a new server instead.
        base = tuple(self.readonly_fields)
        return (*base, "name") if obj is not None else base

    def get_queryset(self, request: HttpRequest) -> QuerySet[McpServer]:
        return super().get_queryset(request).prefetch_related("tools")

    def save_model(self, request: HttpRequest, obj: McpServer, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if not obj.enabled:
            return
        if form.listing is not None:
            try:
                summary = catalog.apply(obj, form.listing)
            except catalog.Collision as exc:
                catalog.record_failure(obj, str(exc))
                self.message_user(request, str(exc), messages.ERROR)
                return
            self.message_user(request, f"MCP server {obj.name}: {summary}", messages.SUCCESS)
        elif form.failure:
            catalog.record_failure(obj, form.failure)
            self.message_user(request, f"MCP server {obj.name}: {form.failure}", messages.WARNING)

    @admin.action(description="Refresh tools", permissions=["change"])
    def refresh_tools(self, request: HttpRequest, queryset: QuerySet[McpServer]) -> None:
        for server in queryset:
            ok, message = catalog.refresh(server)
            level = messages.SUCCESS if ok else messages.ERROR
            self.message_user(request, f"MCP server {server.name}: {message}", level)

    @admin.display(description="token")
    def token_stored(self, obj: McpServer) -> str:
        if obj.token:
            return "a token is stored (write-only)"
        if obj.token_env:
            return f"read from {obj.token_env}"
        return "none"

    @admin.display(description="last refresh result")
    def refresh_status_shown(self, obj: McpServer) -> str:
        if not obj.refresh_status:
            return "never refreshed"
        return ("" if obj.refresh_ok else "Failed: ") + obj.refresh_status

    @admin.display(description="tools")
    def tool_count(self, obj: McpServer) -> int:
        return sum(1 for tool in obj.tools.all() if tool.present)
