"""A real server killed with SIGKILL mid-work, then started again on the same database.

After the restart nothing is lost and nothing stays pending: the half-written reply is kept and
marked interrupted, running tool calls are re-run (safe to repeat) or answered with an error
(not safe), their pairs are flushed, and the conversation goes on at once. The turn lease of the
dead process is released at start-up: TANDEM_LEASE_SECONDS is set far beyond these tests'
timeouts, so waiting for it to expire would fail them.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import PASSWORDS, send, start_conversation
from tests.e2e.server import LiveServer

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def tandem_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One server for this module (overrides the per-test one), with a tool unsafe to repeat."""
    server = LiveServer(
        tmp_path_factory.mktemp("restart"),
        extra_env={
            "TANDEM_EXTRA_TOOL_MODULES": "tests.e2e.restart_tools",
            "TANDEM_LEASE_SECONDS": "300",
        },
    )
    server.manage("migrate", "--noinput")
    server.create_user("alice", PASSWORDS["alice"])
    server.start()
    yield server
    server.stop()


def query(server: LiveServer, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(server.workdir / "live.sqlite3", timeout=5)) as db:
        return db.execute(sql, args).fetchall()


def wait_until(check: Callable[[], bool], within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def conversation_id(url: str) -> int:
    return int(url.rstrip("/").rsplit("/", 1)[-1])


def replies(server: LiveServer, conv: int) -> list[tuple[str, str, str]]:
    rows = query(
        server,
        "SELECT status, content, error FROM chat_message "
        "WHERE conversation_id = ? AND kind = 'reply' ORDER BY seq",
        conv,
    )
    texts = [
        "".join(b.get("text", "") for b in json.loads(content) if b.get("type") == "text")
        for _, content, _ in rows
    ]
    return [(status, text, error) for (status, _, error), text in zip(rows, texts, strict=True)]


def restart(server: LiveServer) -> None:
    server.kill()
    assert Path(server.workdir / "live.sqlite3").exists()
    server.start()


def test_it_keeps_a_reply_cut_by_sigkill_and_answers_the_next_message(
    new_page: Any, tandem_server: LiveServer
) -> None:
    page = new_page("alice")
    conv = conversation_id(start_conversation(page))
    send(page, "write a long answer about tandem bicycles")
    page.locator(".status-streaming .stream").wait_for()
    # Killed once a snapshot of the text is in the database (written about once a second).
    wait_until(lambda: bool(replies(tandem_server, conv)[0][1]))
    assert tandem_server.process is not None
    dead_pid = tandem_server.process.pid
    [(owner,)] = query(
        tandem_server, "SELECT lease_owner FROM chat_conversation WHERE id = ?", conv
    )
    assert f":{dead_pid}:" in owner
    restart(tandem_server)
    page.reload()
    cut = page.locator(".kind-reply.status-interrupted")
    cut.wait_for()
    assert "The server restarted while this reply was being written." in cut.inner_text()
    [(status, partial, _)] = replies(tandem_server, conv)
    assert status == "interrupted" and len(partial) > 10
    assert partial.lstrip("# ").split("\n")[0] in cut.inner_text()  # the kept text is shown

    send(page, "thanks, now a short answer please")
    page.locator(".kind-reply.status-complete").wait_for()
    assert [r[0] for r in replies(tandem_server, conv)] == ["interrupted", "complete"]
    [(owner,)] = query(
        tandem_server, "SELECT lease_owner FROM chat_conversation WHERE id = ?", conv
    )
    assert f":{dead_pid}:" not in owner  # released at start-up, not left to expire


def test_it_reruns_safe_tools_and_answers_unsafe_ones_after_sigkill(
    new_page: Any, tandem_server: LiveServer
) -> None:
    page = new_page("alice")
    conv = conversation_id(start_conversation(page))
    send(page, 'call slow_unsafe with {"seconds": 60}')
    page.locator(".tool-card.status-running", has_text="slow_unsafe").wait_for()
    send(page, "run the demo tool for 3 seconds")
    page.locator(".tool-card.status-running", has_text="tool_buffer_demo").wait_for()
    restart(tandem_server)
    # The open tab reconnects by itself and catches up.
    page.locator("#connection[data-state='open']").wait_for(timeout=30_000)
    failed = page.locator(".tool-card.status-failed", has_text="slow_unsafe").first
    failed.wait_for()
    page.locator(".tool-card.status-succeeded", has_text="tool_buffer_demo").first.wait_for()

    def settled() -> bool:
        open_pairs = query(
            tandem_server,
            "SELECT count(*) FROM chat_toolpair WHERE conversation_id = ? "
            "AND (flushed_at IS NULL OR status IN ('queued', 'running'))",
            conv,
        )
        streaming = query(
            tandem_server,
            "SELECT count(*) FROM chat_message WHERE conversation_id = ? AND status = 'streaming'",
            conv,
        )
        last = query(
            tandem_server,
            "SELECT kind FROM chat_message WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1",
            conv,
        )
        return open_pairs[0][0] == 0 and streaming[0][0] == 0 and last == [("reply",)]

    wait_until(settled)
    pairs = dict(
        (name, (status, attempts, result, is_error))
        for name, status, attempts, result, is_error in query(
            tandem_server,
            "SELECT tool_name, status, attempts, result_content, is_error FROM chat_toolpair "
            "WHERE conversation_id = ?",
            conv,
        )
    )
    status, attempts, result, is_error = pairs["tool_buffer_demo"]
    assert (status, attempts, is_error) == ("succeeded", 2, 0)
    status, attempts, result, is_error = pairs["slow_unsafe"]
    assert (status, attempts, is_error) == ("failed", 1, 1)
    assert "interrupted by a server restart" in json.loads(result)
    # Both results reached the model, which answered them.
    assert all(status == "complete" for status, _, _ in replies(tandem_server, conv))
    assert "Traceback" not in page.content()


def test_it_recovers_at_start_up_even_when_nobody_opens_the_app(
    new_page: Any, tandem_server: LiveServer
) -> None:
    page = new_page("alice")
    conv = conversation_id(start_conversation(page))
    send(page, "run the demo tool for 3 seconds")
    page.locator(".tool-card.status-running", has_text="tool_buffer_demo").wait_for()
    page.context.close()  # no tab left to reconnect: the restarted server is on its own
    restart(tandem_server)

    def answered() -> bool:
        rows = query(
            tandem_server,
            "SELECT status, flushed_at FROM chat_toolpair WHERE conversation_id = ?",
            conv,
        )
        last = query(
            tandem_server,
            "SELECT kind, status FROM chat_message WHERE conversation_id = ? "
            "ORDER BY seq DESC LIMIT 1",
            conv,
        )
        return (
            rows == [("succeeded", rows[0][1])]
            and rows[0][1] is not None
            and last == [("reply", "complete")]
        )

    wait_until(answered, within=30)
