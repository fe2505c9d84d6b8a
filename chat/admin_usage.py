"""Admin for spending: the usage report (by user, group, model or day, with CSV), the price
table and the monthly group budgets with what each has used. Registered by ``chat.admin``."""

from __future__ import annotations

import csv
from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from chat.models import GroupBudget, ModelPrice, UsageRecord
from chat.queries import usage

CSV_HEADER = [
    "key",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "total_tokens",
    "estimated_cost_usd",
    "unpriced_models",
]


class ReportForm(forms.Form):
    group_by = forms.ChoiceField(
        choices=[("user", "user"), ("group", "group"), ("model", "model"), ("day", "day")],
        required=False,
    )
    start = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    user = forms.CharField(required=False, max_length=150)
    group = forms.CharField(required=False, max_length=150)
    model = forms.CharField(required=False, max_length=100)

    def filters(self) -> usage.Filters:
        data = self.cleaned_data if self.is_valid() else {}
        return usage.Filters(
            start=data.get("start"),
            end=data.get("end"),
            user=data.get("user", ""),
            group=data.get("group", ""),
            model=data.get("model", ""),
        )

    def group_by_value(self) -> usage.GroupBy:
        value = self.cleaned_data.get("group_by") if self.is_valid() else None
        return value if value in usage.GROUP_BY else "user"


def _csv(rows: list[usage.ReportRow], totals: Any, group_by: str) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="tandem-usage-by-{group_by}.csv"'
    writer = csv.writer(response)
    writer.writerow([group_by if name == "key" else name for name in CSV_HEADER])
    lines = [(r.key, r.counts, r.cost, sorted(r.unpriced)) for r in rows]
    lines.append(("TOTAL", totals.counts, totals.cost, list(totals.unpriced)))
    for key, counts, money, unpriced in lines:
        # A leading =, +, - or @ would be a formula in a spreadsheet: keep names inert.
        safe_key = f"'{key}" if str(key)[:1] in ("=", "+", "-", "@") else key
        writer.writerow(
            [
                safe_key,
                counts.input,
                counts.output,
                counts.cache_read,
                counts.cache_write,
                counts.total,
                f"{money:.4f}",
                " ".join(unpriced),
            ]
        )
    return response


@admin.register(UsageRecord)
class UsageReportAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """The list page is the report; records themselves are never edited."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        form = ReportForm(request.GET or None)
        group_by = form.group_by_value()
        rows, totals = usage.report(form.filters(), group_by)
        if request.GET.get("format") == "csv":
            return _csv(rows, totals, group_by)
        query = request.GET.copy()
        query["format"] = "csv"
        context = {
            **self.admin_site.each_context(request),
            "title": "Usage report",
            "opts": self.model._meta,
            "form": form,
            "group_by": group_by,
            "rows": rows,
            "totals": totals,
            "csv_query": query.urlencode(),
            "near_limit": usage.near_limit(),
        }
        return TemplateResponse(request, "admin/chat/usage_report.html", context)


@admin.register(ModelPrice)
class ModelPriceAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("model", "input", "output", "cache_write_5m", "cache_write_1h", "cache_read")
    list_editable = ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read")


@admin.register(GroupBudget)
class GroupBudgetAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("group", "monthly_tokens", "monthly_cost", "warn_percent", "used", "status")
    list_select_related = ("group",)
    autocomplete_fields = ("group",)

    @admin.display(description="used this month")
    def used(self, obj: GroupBudget) -> str:
        state = obj.state()
        return (
            f"{state.spend.counts.total:,} tokens, ${state.spend.cost:,.2f} ({state.percent:.0f}%)"
        )

    @admin.display(description="status")
    def status(self, obj: GroupBudget) -> str:
        state = obj.state()
        return "over budget" if state.over else "near the limit" if state.near else "ok"
