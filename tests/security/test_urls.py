"""The outsider and the anonymous visitor, at every URL: they see and change nothing of others."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib import admin
from django.contrib.contenttypes.models import ContentType
from django.test import Client
from django.urls import get_resolver, reverse

from chat.models import Conversation, Message, ToolPair
from tests.security.sockets import foreign_rows

pytestmark = pytest.mark.django_db

CHAT_URLS = {"index", "new", "conversation", "rename", "delete", "settings", "export", "search"}
POSTS = {
    "rename": {"title": "Pwned"},
    "delete": {},
    "settings": {"system_prompt": "Obey me", "thinking": "on"},
}


def as_user(user: Any) -> Client:
    browser = Client()
    if user is not None:
        browser.force_login(user)
    return browser


def test_it_covers_every_chat_url() -> None:
    # A new URL fails this test until it gets its outsider test below.
    assert {p.name for p in get_resolver("chat.urls").url_patterns} == CHAT_URLS


@pytest.mark.parametrize("name", sorted(CHAT_URLS))
def test_it_sends_an_anonymous_visitor_to_log_in(name: str, conversation: Conversation) -> None:
    args = [] if name in {"index", "new", "search"} else [conversation.pk]
    url = reverse(f"chat:{name}", args=args)
    response = Client().post(url) if name in {"new", *POSTS} else Client().get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))
    assert Conversation.objects.count() == 1


def test_it_shows_an_outsider_only_their_own_conversations(
    outsider: Any, conversation: Conversation
) -> None:
    page = as_user(outsider).get(reverse("chat:index")).content.decode()
    assert conversation.get_absolute_url() not in page
    assert "Test" not in page  # the owner's title


def test_it_creates_an_outsiders_conversation_for_the_outsider(
    outsider: Any, conversation: Conversation
) -> None:
    response = as_user(outsider).post(reverse("chat:new"))
    assert response.status_code == 302
    assert Conversation.objects.filter(owner=outsider).count() == 1
    assert Conversation.objects.filter(owner=conversation.owner).count() == 1


@pytest.mark.parametrize("persona", ["outsider", "staff"])
def test_it_answers_404_for_anothers_conversation_as_for_a_missing_one(
    persona: str, request: pytest.FixtureRequest, conversation: Conversation
) -> None:
    browser = as_user(request.getfixturevalue(persona))
    for name in ("conversation", "export"):
        theirs = browser.get(reverse(f"chat:{name}", args=[conversation.pk]))
        missing = browser.get(reverse(f"chat:{name}", args=[conversation.pk + 1000]))
        assert theirs.status_code == missing.status_code == 404
        assert theirs.content == missing.content


def test_it_never_lists_anothers_conversation_in_search_results(
    outsider: Any, conversation: Conversation
) -> None:
    Message.objects.create(
        conversation=conversation,
        seq=1,
        role="user",
        kind="prompt",
        content=[{"type": "text", "text": "Test secret"}],
    )
    page = as_user(outsider).get(reverse("chat:search"), {"q": "Test secret"}).content.decode()
    assert "0 results" in page and conversation.get_absolute_url() not in page


@pytest.mark.parametrize("name", sorted(POSTS))
def test_it_refuses_an_outsiders_change_to_anothers_conversation(
    name: str, outsider: Any, conversation: Conversation
) -> None:
    Message.objects.create(conversation=conversation, seq=1, role="user", kind="prompt")
    before = Conversation.objects.values().get(pk=conversation.pk)
    response = as_user(outsider).post(reverse(f"chat:{name}", args=[conversation.pk]), POSTS[name])
    assert response.status_code == 404
    assert Conversation.objects.values().get(pk=conversation.pk) == before
    assert conversation.messages.count() == 1


def _admin_urls(foreign: dict[str, int]) -> list[str]:
    urls = [reverse("admin:index"), reverse("admin:app_list", args=["chat"])]
    objects = {Conversation: foreign["conversation"], ToolPair: foreign["running"]}
    for model in admin.site._registry:
        info = (model._meta.app_label, model._meta.model_name)
        urls.append(reverse("admin:{}_{}_changelist".format(*info)))
        pk = objects.get(model)
        if pk is not None:
            urls.append(reverse("admin:{}_{}_change".format(*info), args=[pk]))
            urls.append(reverse("admin:{}_{}_history".format(*info), args=[pk]))
    kind = ContentType.objects.get_for_model(Conversation).pk
    urls.append(reverse("admin:view_on_site", args=[kind, foreign["conversation"]]))
    return urls


@pytest.mark.parametrize("persona", [None, "outsider"])
def test_it_keeps_non_staff_out_of_admin(
    persona: str | None, request: pytest.FixtureRequest, owner: Any
) -> None:
    foreign = foreign_rows(owner)
    browser = as_user(request.getfixturevalue(persona) if persona else None)
    logins = (reverse("admin:login"), reverse("login"))  # the site's login for anonymous visitors
    for url in _admin_urls(foreign):
        response = browser.get(url)
        assert response.status_code == 302 and response["Location"].startswith(logins), url
    action = {"action": "delete_selected", "_selected_action": [foreign["running"]]}
    response = browser.post(reverse("admin:chat_toolpair_changelist"), action)
    assert response.status_code == 302 and response["Location"].startswith(logins)
    assert ToolPair.objects.count() == 2


def test_it_lets_staff_into_admin(staff: Any, owner: Any) -> None:
    foreign = foreign_rows(owner)
    browser = as_user(staff)
    for url in _admin_urls(foreign)[:-1]:  # view_on_site redirects to the page itself
        assert browser.get(url).status_code == 200, url
