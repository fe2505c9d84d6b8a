"""chat.services.conversations: titles, settings, deletion, and the change counter."""

from __future__ import annotations

from typing import Any

import pytest

from chat.models import Conversation
from chat.services import conversations
from chat.services.errors import UserInputError

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("Short question", "Short question"),
        ("  first   line  \nsecond line", "first line"),
        ("word " * 30, ("word " * 12).strip() + "…"),
    ],
)
def test_it_derives_a_title_from_the_first_line(text: str, title: str) -> None:
    assert conversations.derive_title(text) == title


def test_it_renames_with_a_new_rev_and_refuses_a_blank_title(conversation: Conversation) -> None:
    before = conversation.rev
    renamed = conversations.rename_conversation(conversation.pk, "  New\x00 name ")
    assert renamed.title == "New name" and renamed.rev == before + 1
    with pytest.raises(UserInputError):
        conversations.rename_conversation(conversation.pk, " \x00 ")


def test_it_saves_the_system_prompt_and_the_thinking_switch(conversation: Conversation) -> None:
    saved = conversations.update_settings(
        conversation.pk, system_prompt=" Be brief. ", thinking=True
    )
    assert saved.system_prompt == "Be brief." and saved.thinking_budget
    off = conversations.update_settings(conversation.pk, system_prompt="", thinking=False)
    assert off.thinking_budget is None
    with pytest.raises(UserInputError):
        conversations.update_settings(conversation.pk, system_prompt="x" * 10_001, thinking=False)


def test_it_deletes_a_conversation(owner: Any) -> None:
    conversation = conversations.create_conversation(owner, title="  gone  ")
    assert conversation.title == "gone"
    conversations.delete_conversation(conversation.pk)
    assert not Conversation.objects.filter(pk=conversation.pk).exists()
