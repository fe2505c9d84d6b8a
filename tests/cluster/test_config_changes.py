"""Configuration changed in one process takes effect on the next turn in every other one, though
each web process keeps the configuration in memory (chat.services.config_cache)."""

from __future__ import annotations

import pytest

from tests.cluster.harness import Cluster, Tab, signed_in

pytestmark = [pytest.mark.cluster, pytest.mark.postgres, pytest.mark.redis]

SET_CALCULATE = (
    "from tools.models import ToolPolicy; "
    "ToolPolicy.objects.filter(tool_name='calculate').update(enabled={enabled})"
)
RESTRICT_CALCULATE = (
    "from django.contrib.auth.models import Group; from tools.models import ToolPolicy; "
    "g, _ = Group.objects.get_or_create(name='finance'); "
    "ToolPolicy.objects.get(tool_name='calculate').allowed_groups.set([g])"
)
JOIN_FINANCE = (
    "from django.contrib.auth.models import Group, User; "
    "User.objects.get(username='alice').groups.add(Group.objects.get(name='finance'))"
)


def calculate_calls(cluster: Cluster, conversation_id: int) -> int:
    """Calls of calculate the policy let run. (Once the thread holds a calculate call, the
    request keeps describing the tool, offered or not, and a call to it is refused.)"""
    query = (
        "SELECT count(*) FROM chat_toolpair WHERE conversation_id = %s AND tool_name = %s"
        " AND decision = 'allowed'"
    )
    return int(cluster.sql(query, conversation_id, "calculate")[0][0])


IDLE = (
    "SELECT (SELECT count(*) FROM chat_toolpair WHERE conversation_id = %s"
    " AND flushed_at IS NULL),"
    " (SELECT lease_owner FROM chat_conversation WHERE id = %s),"
    " (SELECT kind || ':' || status FROM chat_message WHERE conversation_id = %s"
    " ORDER BY seq DESC LIMIT 1),"
    " (SELECT count(*) FROM chat_message WHERE conversation_id = %s AND kind = 'reply')"
)


async def ask(cluster: Cluster, tab: Tab, conversation_id: int, text: str) -> int:
    """Ask for a calculation through ``tab`` and wait until the conversation is idle again
    (every call answered, the last reply complete); how many calculate calls it ran."""
    calls = calculate_calls(cluster, conversation_id)
    replies = int(cluster.sql(IDLE, *[conversation_id] * 4)[0][3])
    await tab.send({"type": "send", "text": text})
    rows = cluster.wait_sql(
        IDLE,
        *[conversation_id] * 4,
        until=lambda r: r[0][:3] == (0, "", "reply:complete") and r[0][3] > replies,
        within=30,
    )
    assert rows[0][:3] == (0, "", "reply:complete")
    return calculate_calls(cluster, conversation_id) - calls


async def test_a_change_made_elsewhere_reaches_every_web_process_on_the_next_turn(
    cluster: Cluster,
) -> None:
    cookie, conversation_id = await signed_in(cluster.url)
    one = await Tab(cluster.urls["web 1"], cookie, conversation_id).open()
    two = await Tab(cluster.urls["web 2"], cookie, conversation_id).open()
    try:
        # Both processes have built a turn, so both hold the configuration in memory.
        assert await ask(cluster, one, conversation_id, "calculate 6*7") == 1
        assert await ask(cluster, two, conversation_id, "calculate 6*8") == 1

        cluster.shell(SET_CALCULATE.format(enabled=False))  # a third process
        assert await ask(cluster, one, conversation_id, "calculate 6*9") == 0
        assert await ask(cluster, two, conversation_id, "calculate 7*9") == 0

        cluster.shell(SET_CALCULATE.format(enabled=True))
        assert await ask(cluster, one, conversation_id, "calculate 8*9") == 1
        cluster.shell(RESTRICT_CALCULATE)  # alice is in no group yet
        assert await ask(cluster, two, conversation_id, "calculate 9*9") == 0
        cluster.shell(JOIN_FINANCE)
        assert await ask(cluster, one, conversation_id, "calculate 9*10") == 1
    finally:
        await one.close()
        await two.close()
