"""Two tabs of one conversation on two web processes, tools on two workers (issue 11, item 3)."""

from __future__ import annotations

import re
import time

import pytest

from tests.cluster.harness import Cluster, Tab, signed_in

pytestmark = [pytest.mark.cluster, pytest.mark.postgres, pytest.mark.redis]

PAIR = "SELECT id, status, runner, attempts FROM chat_toolpair WHERE conversation_id = %s"


def newest_reply_words(cluster: Cluster, conversation_id: int, after_seq: int) -> list[str]:
    """Words of the first finished reply after ``after_seq`` (to look for in the tabs)."""
    rows = cluster.wait_sql(
        "SELECT content FROM chat_message WHERE conversation_id = %s AND seq > %s"
        " AND kind = 'reply' AND status = 'complete' ORDER BY seq",
        conversation_id,
        after_seq,
        until=lambda r: bool(r),
        within=30,
    )
    assert rows, "no finished reply"
    text = " ".join(b.get("text", "") for b in rows[0][0] if b.get("type") == "text")
    return [w for w in re.findall(r"[A-Za-z]{6,}", text)]


def results_seq(cluster: Cluster, conversation_id: int) -> int:
    rows = cluster.wait_sql(
        "SELECT seq FROM chat_message WHERE conversation_id = %s AND kind = 'tool_results'",
        conversation_id,
        until=lambda r: bool(r),
        within=30,
    )
    assert rows, "the result was never flushed into the thread"
    return int(rows[0][0])


def tool_results(cluster: Cluster, conversation_id: int) -> list[str]:
    """The tool_use_id of every tool_result block in the thread."""
    rows = cluster.sql(
        "SELECT content FROM chat_message WHERE conversation_id = %s AND kind = 'tool_results'",
        conversation_id,
    )
    return [b["tool_use_id"] for (content,) in rows for b in content if b["type"] == "tool_result"]


async def two_tabs(cluster: Cluster) -> tuple[Tab, Tab, int]:
    cookie, conversation_id = await signed_in(cluster.url)
    one = await Tab(cluster.urls["web 1"], cookie, conversation_id).open()
    two = await Tab(cluster.urls["web 2"], cookie, conversation_id).open()
    return one, two, conversation_id


async def follow_a_demo_tool_call(cluster: Cluster, one: Tab, two: Tab, conversation: int) -> None:
    """A demo tool call sent from one tab: its reply, the worker's progress and the
    continuation reach both tabs, and the call ran once, on a worker."""
    await one.send({"type": "send", "text": "run the demo tool for 2 seconds"})
    for tab in (one, two):
        await tab.wait_for("start the demo tool")  # the reply streams to both
        await tab.wait_for("1 of 2 s")  # progress from the worker reaches both
    pairs = cluster.sql(PAIR, conversation)
    assert len(pairs) == 1
    assert cluster.child_of(pairs[0][2]).startswith("worker")  # ran on a worker
    words = newest_reply_words(cluster, conversation, results_seq(cluster, conversation))
    for tab in (one, two):
        await tab.wait_for(words[-1])  # the continuation reached both
    assert cluster.sql(PAIR, conversation)[0][1] == "succeeded"
    assert len(tool_results(cluster, conversation)) == 1


async def test_two_tabs_on_two_processes_follow_stream_progress_and_continuation(
    cluster: Cluster,
) -> None:
    one, two, conversation_id = await two_tabs(cluster)
    try:
        await follow_a_demo_tool_call(cluster, one, two, conversation_id)
    finally:
        await one.close()
        await two.close()


async def test_cancel_on_another_process_stops_the_tool_on_its_worker_within_a_second(
    cluster: Cluster,
) -> None:
    one, two, conversation_id = await two_tabs(cluster)
    try:
        await one.send({"type": "send", "text": "run the demo tool for 30 seconds"})
        await two.wait_for("1 of 30 s")
        (pair_id, status, runner, _), *_ = cluster.sql(PAIR, conversation_id)
        assert status == "running" and cluster.child_of(runner).startswith("worker")
        pressed = time.time()
        await two.send({"type": "cancel", "pair": pair_id})
        # The tool itself stopped (its task returned) on the worker, not only the pair's row.
        rows = cluster.wait_sql(
            "SELECT extract(epoch FROM finished_at), return_value"
            " FROM django_tasks_database_dbtaskresult"
            " WHERE args_kwargs->'args'->>0 = %s AND status = 'SUCCESSFUL'",
            str(pair_id),
            until=lambda r: bool(r),
            within=10,
        )
        assert rows and rows[-1][1] == "cancelled"
        assert float(rows[-1][0]) - pressed < 1.0
        seq = results_seq(cluster, conversation_id)
        words = newest_reply_words(cluster, conversation_id, seq)
        await one.wait_for(words[-1])  # the conversation goes on, in the other tab too
        assert cluster.sql(PAIR, conversation_id)[0][1] == "cancelled"
        assert len(tool_results(cluster, conversation_id)) == 1
    finally:
        await one.close()
        await two.close()


async def test_stop_on_another_process_stops_the_reply(cluster: Cluster) -> None:
    one, two, conversation_id = await two_tabs(cluster)
    try:
        await one.send({"type": "send", "text": "write a long answer about tandem bicycles"})
        rows = cluster.wait_sql(
            "SELECT id FROM chat_message WHERE conversation_id = %s AND status = 'streaming'",
            conversation_id,
            until=lambda r: bool(r),
            within=30,
        )
        assert rows, "the reply never started"
        reply_id = rows[0][0]
        await two.send({"type": "stop", "message": reply_id})
        stopped = cluster.wait_sql(
            "SELECT status FROM chat_message WHERE id = %s",
            reply_id,
            until=lambda r: r[0][0] != "streaming",
            within=5,
        )
        assert stopped[0][0] == "interrupted"
    finally:
        await one.close()
        await two.close()


CONFIG_CHANGED = "UPDATE tools_configgeneration SET token = token + 1"


async def test_approval_on_another_process_runs_the_call_on_a_worker(cluster: Cluster) -> None:
    # Plain SQL sends no signal: it moves the configuration token itself (tools/config_generation).
    cluster.sql("UPDATE tools_toolpolicy SET approval = 'owner' WHERE tool_name = 'calculate'")
    cluster.sql(CONFIG_CHANGED)
    try:
        one, two, conversation_id = await two_tabs(cluster)
        try:
            await one.send({"type": "send", "text": "calculate 17*23"})
            rows = cluster.wait_sql(
                PAIR, conversation_id, until=lambda r: bool(r) and r[0][1] != "queued", within=30
            )
            pair_id, status, _, _ = rows[0]
            assert status == "awaiting_approval"
            await two.send({"type": "approve", "pair": pair_id})
            await one.wait_for("391")  # the result, then the continuation, in the other tab
            rows = cluster.wait_sql(
                PAIR, conversation_id, until=lambda r: r[0][1] == "succeeded", within=10
            )
            assert rows[0][1] == "succeeded"
            assert cluster.child_of(rows[0][2]).startswith("worker")
        finally:
            await one.close()
            await two.close()
    finally:
        cluster.sql("UPDATE tools_toolpolicy SET approval = 'auto' WHERE tool_name = 'calculate'")
        cluster.sql(CONFIG_CHANGED)


# Configuration changed in one process takes effect on the next turn in every other one, though
# each web process keeps the configuration in memory (chat.services.config_cache). Here rather
# than in a module of its own: it shares this module's cluster (starting one costs ~25 s).

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


RESET_CALCULATE = (
    "from django.contrib.auth.models import Group; from tools.models import ToolPolicy; "
    "ToolPolicy.objects.get(tool_name='calculate').allowed_groups.clear(); "
    "ToolPolicy.objects.filter(tool_name='calculate').update(enabled=True); "
    "Group.objects.filter(name='finance').delete()"
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
        cluster.shell(RESET_CALCULATE)  # for the other tests of this cluster
