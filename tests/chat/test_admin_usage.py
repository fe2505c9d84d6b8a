"""The admin usage report (linked from the index, filters, totals, CSV), prices and budgets."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from chat.models import GroupBudget, UsageRecord

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("price_table")]

REPORT = "admin:chat_usagerecord_changelist"


@pytest.fixture
def staff_client(staff: Any) -> Client:
    client = Client()
    client.force_login(staff)
    return client


@pytest.fixture
def records(owner: Any, outsider: Any) -> None:
    UsageRecord.objects.create(user=owner, model="claude-sonnet-5-5", input_tokens=1_234_567)
    UsageRecord.objects.create(user=outsider, model="claude-haiku-5-5", output_tokens=2_000)
    UsageRecord.objects.create(user=outsider, model="=HYPERLINK()", output_tokens=1)


def test_the_admin_index_links_to_the_report(staff_client: Client) -> None:
    page = staff_client.get(reverse("admin:index"))
    assert reverse(REPORT) in page.content.decode()
    assert "Usage report" in page.content.decode()


def test_the_report_shows_grouped_numbers_and_totals(staff_client: Client, records: None) -> None:
    html = staff_client.get(reverse(REPORT), {"group_by": "user"}).content.decode()
    assert "1,234,567" in html and "$3.70" in html  # 1,234,567 input tokens at $3 per million
    assert "1,236,568" in html  # the total
    assert "no price for =HYPERLINK()" in html
    model_html = staff_client.get(reverse(REPORT), {"group_by": "model"}).content.decode()
    assert "claude-haiku-5-5" in model_html and "$0.01" in model_html


def test_the_csv_export_holds_the_rows_and_the_total(staff_client: Client, records: None) -> None:
    response = staff_client.get(reverse(REPORT), {"group_by": "model", "format": "csv"})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0][:2] == ["model", "input_tokens"]
    by_key = {row[0]: row for row in rows[1:]}
    assert by_key["claude-sonnet-5-5"][5:7] == ["1234567", "3.7037"]
    assert by_key["TOTAL"][5] == "1236568"
    assert "'=HYPERLINK()" in by_key  # a name never becomes a spreadsheet formula


def test_the_report_filters(staff_client: Client, records: None) -> None:
    response = staff_client.get(reverse(REPORT), {"user": "outsider", "format": "csv"})
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert [row[0] for row in rows[1:]] == ["outsider", "TOTAL"]
    assert rows[-1][5] == "2001"


def test_a_user_cannot_see_the_report(client: Client, owner: Any, records: None) -> None:
    client.force_login(owner)
    response = client.get(reverse(REPORT), {"format": "csv"})
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert "1234567" not in response.content.decode()


def test_staff_without_the_view_permission_cannot_see_it(client: Client, records: None) -> None:
    clerk = get_user_model().objects.create_user("clerk", password="clerk-pass-123", is_staff=True)
    client.force_login(clerk)
    assert client.get(reverse(REPORT), {"format": "csv"}).status_code == 403


def test_budgets_show_what_each_group_used(staff_client: Client, owner: Any) -> None:
    group = Group.objects.create(name="Research")
    group.user_set.add(owner)
    GroupBudget.objects.create(group=group, monthly_tokens=1_000)
    UsageRecord.objects.create(user=owner, model="claude-sonnet-5-5", output_tokens=900)
    html = staff_client.get(reverse("admin:chat_groupbudget_changelist")).content.decode()
    assert "900 tokens" in html and "(90%)" in html and "near the limit" in html
    report = staff_client.get(reverse(REPORT)).content.decode()
    assert "Research: 90% used" in report and "owner: 900 tokens" in report


def test_prices_are_listed_and_editable_in_admin(staff_client: Client) -> None:
    html = staff_client.get(reverse("admin:chat_modelprice_changelist")).content.decode()
    assert "claude-sonnet-5-5" in html and "claude-opus-5-5" in html
