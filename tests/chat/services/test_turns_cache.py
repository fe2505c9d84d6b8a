"""chat.services.turns: the caching strategy setting reaches every request, which stays valid."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from chat.models import Conversation
from chat.services import messages, turns
from chat.simulator.validator import validate_request

pytestmark = pytest.mark.django_db


def marks(request: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = [*request.get("tools", []), *request.get("system", [])]
    blocks += [b for turn in request["messages"] for b in turn["content"]]
    return [b["cache_control"] for b in blocks if "cache_control" in b]


@pytest.mark.parametrize(
    ("strategy", "control"),
    [
        ("keepalive", {"type": "ephemeral"}),
        ("off", {"type": "ephemeral"}),
        ("1h", {"type": "ephemeral", "ttl": "1h"}),
    ],
)
def test_the_strategy_sets_the_cache_lifetime(
    conversation: Conversation, strategy: str, control: dict[str, str]
) -> None:
    Conversation.objects.filter(pk=conversation.pk).update(system_prompt="Be brief.")
    messages.post_user_message(conversation.pk, "hello")
    with override_settings(TANDEM_CACHE_STRATEGY=strategy):
        turn = turns.load_turn_input(conversation.pk)
    assert turn is not None
    validate_request(dict(turn.request))
    assert marks(dict(turn.request)) == [control] * 3  # tools, system, the newest block
