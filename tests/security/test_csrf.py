"""CSRF on every form: a POST without the token is refused, with it the form works."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from chat.models import Conversation

pytestmark = pytest.mark.django_db

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
FORM = re.compile(r"<form\b[^>]*>.*?</form>", re.S | re.I)


def strict(user: Any = None) -> Client:
    browser = Client(enforce_csrf_checks=True)
    if user is not None:
        browser.force_login(user)
    return browser


def posts(conversation: Conversation) -> list[tuple[str, dict[str, str]]]:
    pk = conversation.pk
    return [
        (reverse("chat:new"), {}),
        (reverse("chat:rename", args=[pk]), {"title": "Renamed"}),
        (reverse("chat:settings", args=[pk]), {"system_prompt": "Be terse"}),
        (reverse("chat:delete", args=[pk]), {}),
        (reverse("logout"), {}),
    ]


def test_it_refuses_every_form_post_without_a_token(owner: Any, conversation: Conversation) -> None:
    browser = strict(owner)
    for url, data in posts(conversation):
        assert browser.post(url, data).status_code == 403, url
    assert Conversation.objects.filter(owner=owner).count() == 1
    assert Conversation.objects.get(pk=conversation.pk).title == "Test"


def test_it_refuses_a_login_without_a_token(owner: Any) -> None:
    for url in (reverse("login"), reverse("admin:login")):
        response = strict().post(url, {"username": "owner", "password": "owner-pass-123"})
        assert response.status_code == 403, url


def test_it_refuses_an_admin_action_without_a_token(staff: Any) -> None:
    response = strict(staff).post(
        reverse("admin:chat_toolpair_changelist"), {"action": "delete_selected"}
    )
    assert response.status_code == 403


def test_it_accepts_the_forms_with_the_pages_token(owner: Any, conversation: Conversation) -> None:
    browser = strict(owner)
    page = browser.get(conversation.get_absolute_url()).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token is not None
    url = reverse("chat:rename", args=[conversation.pk])
    response = browser.post(url, {"title": "Renamed", "csrfmiddlewaretoken": token.group(1)})
    assert response.status_code == 302
    assert Conversation.objects.get(pk=conversation.pk).title == "Renamed"


def test_it_puts_a_token_in_every_post_form_of_every_template() -> None:
    checked = 0
    for path in TEMPLATES.rglob("*.html"):
        for form in FORM.findall(path.read_text()):
            if re.search(r'method="post"', form, re.I):
                assert "{% csrf_token %}" in form, f"{path}: {form[:80]}"
                checked += 1
    assert checked >= 6
