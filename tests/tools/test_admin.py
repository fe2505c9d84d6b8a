"""Tool policies in Django admin: listed, edited in the list and on their page."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from tools.models import ToolPolicy
from tools.registry import registry, spec_from_function

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:tools_toolpolicy_changelist"


def late_tool() -> str:
    """A tool registered after migrate."""
    return "late"


@pytest.fixture
def staff_client(staff: Any) -> Client:
    client = Client()
    client.force_login(staff)
    return client


def test_it_lists_every_registered_tool_with_editable_columns(staff_client: Client) -> None:
    page = staff_client.get(reverse(CHANGELIST))
    assert page.status_code == 200
    listed = {p.tool_name for p in page.context["cl"].result_list}
    assert set(registry.names()) <= listed
    assert "form-0-approval" in page.content.decode()  # editable columns


def test_it_adds_a_row_for_a_tool_registered_since_migrate(staff_client: Client) -> None:
    with registry.temporarily(spec_from_function(late_tool)):
        staff_client.get(reverse(CHANGELIST))
    assert ToolPolicy.objects.filter(tool_name="late_tool").exists()


def test_it_edits_policies_in_the_list(staff_client: Client) -> None:
    rows = list(ToolPolicy.objects.order_by("tool_name"))
    data: dict[str, Any] = {
        "form-TOTAL_FORMS": str(len(rows)),
        "form-INITIAL_FORMS": str(len(rows)),
        "form-MIN_NUM_FORMS": "0",
        "form-MAX_NUM_FORMS": "1000",
        "_save": "Save",
    }
    for i, row in enumerate(rows):
        data[f"form-{i}-id"] = str(row.pk)
        data[f"form-{i}-approval"] = "staff" if row.tool_name == "calculate" else row.approval
        data[f"form-{i}-timeout_s"] = "30" if row.tool_name == "calculate" else ""
        data[f"form-{i}-may_start_chain"] = "on"
        if row.tool_name != "calculate":
            data[f"form-{i}-enabled"] = "on"
    response = staff_client.post(reverse(CHANGELIST), data)
    assert response.status_code == 302
    calculate = ToolPolicy.objects.get(tool_name="calculate")
    assert (calculate.enabled, calculate.approval, calculate.timeout_s) == (False, "staff", 30)
    assert ToolPolicy.objects.get(tool_name="current_time").enabled


def test_it_edits_groups_and_chain_targets_on_the_policy_page(staff_client: Client) -> None:
    group = Group.objects.create(name="research")
    policy = ToolPolicy.objects.get(tool_name="current_time")
    target = ToolPolicy.objects.get(tool_name="calculate")
    url = reverse("admin:tools_toolpolicy_change", args=[policy.pk])
    page = staff_client.get(url)
    html = page.content.decode()
    assert page.status_code == 200 and "selectfilter" in html
    assert "Empty: everyone may." in html and "Empty: any tool." in html
    response = staff_client.post(
        url,
        {
            "enabled": "on",
            "approval": "owner",
            "timeout_s": "",
            "may_start_chain": "on",
            "allowed_groups": [str(group.pk)],
            "chain_targets": [str(target.pk)],
        },
    )
    assert response.status_code == 302
    policy.refresh_from_db()
    assert policy.approval == "owner"
    assert list(policy.allowed_groups.all()) == [group]
    assert list(policy.chain_targets.all()) == [target]


def test_it_does_not_add_or_delete_a_registered_tools_policy(staff_client: Client) -> None:
    policy = ToolPolicy.objects.get(tool_name="calculate")
    assert staff_client.get(reverse("admin:tools_toolpolicy_add")).status_code == 403
    delete = reverse("admin:tools_toolpolicy_delete", args=[policy.pk])
    assert staff_client.post(delete, {"post": "yes"}).status_code == 403
    stale = ToolPolicy.objects.create(tool_name="removed_tool")
    delete = reverse("admin:tools_toolpolicy_delete", args=[stale.pk])
    assert staff_client.post(delete, {"post": "yes"}).status_code == 302
    assert not ToolPolicy.objects.filter(tool_name="removed_tool").exists()
