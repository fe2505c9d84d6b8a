"""chat.sockets.fanout: tabs at one cursor share one read of the changes, rendered once."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.test import override_settings

from chat.queries import thread
from chat.runtime import events
from chat.services import messages
from chat.sockets import digest, fanout
from tests.conftest import Subscription

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Counts the reads and holds each one until ``release`` is set."""
    seen: dict[str, Any] = {"reads": 0, "release": threading.Event()}
    original = thread.changes_since

    def changes_since(*args: Any, **kwargs: Any) -> Any:
        seen["reads"] += 1
        seen["release"].wait(10)
        return original(*args, **kwargs)

    monkeypatch.setattr(thread, "changes_since", changes_since)
    return seen


async def test_tabs_at_one_cursor_share_one_read_and_one_rendering(
    conversation: Any, counted: dict[str, Any]
) -> None:
    await database_sync_to_async(messages.post_user_message)(conversation.pk, "hello")
    rung = time.time()  # one bell, heard by five tabs
    tabs = [
        asyncio.ensure_future(fanout.changes_since(conversation.pk, 0, 0, rung_at=rung))
        for _ in range(5)
    ]
    await asyncio.sleep(0.05)
    counted["release"].set()
    answers = await asyncio.gather(*tabs)
    assert counted["reads"] == 1
    assert all(a is answers[0] for a in answers) and answers[0] is not None
    assert "hello" in answers[0].new


async def test_another_cursor_or_a_later_doorbell_reads_again(
    conversation: Any, counted: dict[str, Any]
) -> None:
    counted["release"].set()
    await fanout.changes_since(conversation.pk, 0, 0)
    await fanout.changes_since(conversation.pk, 0, 0)  # after the first answered
    await fanout.changes_since(conversation.pk, 0, 0, resync=True)
    assert counted["reads"] == 3


async def test_a_tab_that_closes_while_waiting_leaves_the_read_to_the_others(
    conversation: Any, counted: dict[str, Any]
) -> None:
    rung = time.time()
    first = asyncio.ensure_future(fanout.changes_since(conversation.pk, 0, 0, rung_at=rung))
    second = asyncio.ensure_future(fanout.changes_since(conversation.pk, 0, 0, rung_at=rung))
    await asyncio.sleep(0.05)
    first.cancel()
    counted["release"].set()
    assert await second is not None
    assert first.cancelled() and counted["reads"] == 1


async def test_a_bell_rung_after_a_read_began_is_not_answered_by_that_read(
    conversation: Any, counted: dict[str, Any]
) -> None:
    before = time.time()
    early = asyncio.ensure_future(fanout.changes_since(conversation.pk, 0, 0, rung_at=before))
    await asyncio.sleep(0.05)  # the read is in flight; a change commits and its bell rings
    late = asyncio.ensure_future(fanout.changes_since(conversation.pk, 0, 0, rung_at=time.time()))
    same_bell = asyncio.ensure_future(fanout.changes_since(conversation.pk, 0, 0, rung_at=before))
    unstamped = asyncio.ensure_future(fanout.changes_since(conversation.pk, 0, 0))
    await asyncio.sleep(0.05)
    counted["release"].set()
    answers = await asyncio.gather(early, late, same_bell, unstamped)
    assert counted["reads"] == 3  # the early read, the late bell's, the unstamped one's
    assert answers[1] is not answers[0]  # the late bell did not take the early read's answer
    assert answers[2] is answers[1]  # the newest read began after the earlier bell too


def test_reads_never_leave_the_shared_thread_on_an_in_memory_sqlite() -> None:
    assert not fanout.reads_off_thread()  # the test database lives in memory
    for chosen in (None, True, False):
        with override_settings(TANDEM_DB_READS_OFF_THREAD=chosen):
            assert not fanout.reads_off_thread()


@pytest.mark.parametrize(
    ("vendor", "chosen", "off_thread"),
    [
        ("sqlite", None, False),  # CPU in this process: one thread takes the GIL back, not three
        ("postgresql", None, True),  # waits on the server overlap in reader threads
        ("sqlite", True, True),
        ("postgresql", False, False),
    ],
)
def test_reads_leave_the_shared_thread_on_postgresql_unless_chosen_otherwise(
    monkeypatch: pytest.MonkeyPatch, vendor: str, chosen: bool | None, off_thread: bool
) -> None:
    connection = connections[DEFAULT_DB_ALIAS]
    monkeypatch.setattr(connection, "vendor", vendor)
    monkeypatch.setattr(connection, "is_in_memory_db", lambda: False, raising=False)
    with override_settings(TANDEM_DB_READS_OFF_THREAD=chosen):
        assert fanout.reads_off_thread() is off_thread


async def test_reads_off_the_shared_thread_run_in_the_readers_own_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fanout, "reads_off_thread", lambda: True)
    names = await asyncio.gather(*(fanout.read(_thread_name)() for _ in range(8)))
    assert {name.rsplit("_", 1)[0] for name in names} == {"tandem-reader"}
    assert fanout.reader_pool()._max_workers == settings.TANDEM_DB_READER_THREADS == 2


def _thread_name() -> str:
    return threading.current_thread().name


# --- the writer's side: what a doorbell carries ------------------------------------------------


@pytest.fixture
def fresh_fanout(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    """Bells that carry their change (``TANDEM_CARRY_CHANGES``), from a clean slate."""
    settings.TANDEM_CARRY_CHANGES = True
    monkeypatch.setattr(fanout, "_told", OrderedDict())


def test_bells_carry_nothing_unless_chosen(conversation: Any) -> None:
    assert settings.TANDEM_CARRY_CHANGES is False  # the default: the tabs read
    bells = Subscription(events.conversation_group(conversation.pk))  # a tab here follows
    for text in ("one", "two"):
        messages.post_user_message(conversation.pk, text)
        assert set(bells()[-1]) == {"type", "at"}


@pytest.mark.usefixtures("fresh_fanout")
def test_a_bell_carries_its_change_once_a_tab_here_follows_and_a_cursor_is_known(
    conversation: Any,
) -> None:
    """Every bell is described by the writer after its commit (chat.apps wires ``describe``);
    a tab here follows the conversation while its socket is in the group."""
    group = events.conversation_group(conversation.pk)
    bells = Subscription(f"{group}-elsewhere")  # a channel that hears nothing of it yet
    messages.post_user_message(conversation.pk, "before anyone looks")
    assert not fanout.followed_here(conversation.pk)  # nobody follows here: nothing built
    assert conversation.pk not in fanout._told
    bells.leave()
    bells = Subscription(group)
    assert fanout.followed_here(conversation.pk)
    messages.post_user_message(conversation.pk, "first")
    assert "digest" not in bells()[-1]  # no cursor told yet: the tabs read this one
    start = thread.cursor(conversation.pk)
    assert start is not None and fanout._told[conversation.pk] == start
    messages.post_user_message(conversation.pk, "now it travels")
    bell = bells()[-1]
    expected = digest.build(thread.changes_since(conversation.pk, *start))  # type: ignore[arg-type]
    assert fanout.carried(conversation.pk, bell) == (start, expected)
    assert "now it travels" in expected.new
    assert fanout._told[conversation.pk] == (expected.seq, expected.rev)
    bells.leave()
    assert not fanout.followed_here(conversation.pk)
    messages.post_user_message(conversation.pk, "nobody again")
    assert conversation.pk not in fanout._told


@pytest.mark.usefixtures("fresh_fanout")
def test_with_several_processes_every_bell_is_described_and_a_big_change_travels_plain(
    conversation: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bells = Subscription(events.conversation_group(conversation.pk))
    with override_settings(TANDEM_DOORBELLS=True):  # tabs elsewhere may follow
        messages.post_user_message(conversation.pk, "the cursor is told")
        messages.post_user_message(conversation.pk, "x" * 50)
        assert "digest" in bells()[-1]
        monkeypatch.setattr(fanout, "CARRIED_MAX_CHARS", 10)
        messages.post_user_message(conversation.pk, "y" * 50)
        assert "digest" not in bells()[-1]  # the tabs read it...
        told = fanout._told[conversation.pk]
        assert told == thread.cursor(conversation.pk)  # ...and the next starts after it
        gone = conversation.pk
        conversation.delete()
        assert fanout.describe(gone) is None
        assert gone not in fanout._told


def test_a_bell_rings_plain_when_describing_fails(
    conversation: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    bells = Subscription(events.conversation_group(conversation.pk))

    def broken(conversation_id: int) -> None:
        raise RuntimeError("no")

    monkeypatch.setattr(events, "_describe", broken)
    messages.post_user_message(conversation.pk, "still rings")
    (bell,) = bells()
    assert set(bell) == {"type", "at"} and "describing conversation" in caplog.text


@pytest.mark.usefixtures("fresh_fanout")
async def test_a_tabs_read_tells_where_the_tabs_stand_only_ever_forward(conversation: Any) -> None:
    await database_sync_to_async(messages.post_user_message)(conversation.pk, "hello")
    fanout._told.pop(conversation.pk, None)
    await fanout.changes_since(conversation.pk, 0, 0, resync=True)
    assert conversation.pk not in fanout._told  # a page's sync starts at the page's own word
    read = await fanout.changes_since(conversation.pk, 0, 0)
    assert read is not None and fanout._told[conversation.pk] == (read.seq, read.rev)
    ahead = (read.seq + 1, read.rev + 1)
    fanout._told[conversation.pk] = ahead  # only ever forward: an older read leaves it
    await fanout.changes_since(conversation.pk, 0, 0)
    assert fanout._told[conversation.pk] == ahead


@pytest.mark.usefixtures("fresh_fanout")
def test_a_bell_built_by_another_process_moves_where_the_next_digest_starts() -> None:
    fanout._told[12] = (1, 1)
    newer = digest.Digest("T", 7, 4, "", (), (), ())
    assert fanout.carried(12, {"type": "conv.changed", "start": [1, 1], "digest": newer})
    assert fanout._told[12] == (4, 7)
    older = digest.Digest("T", 5, 3, "", (), (), ())
    fanout.carried(12, {"type": "conv.changed", "start": [1, 1], "digest": older})
    assert fanout._told[12] == (4, 7)


@pytest.mark.usefixtures("fresh_fanout")
def test_a_change_that_cannot_be_read_leaves_the_tab_to_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert fanout.carried(12, {"type": "conv.changed", "start": [1, 1], "digest": [1, 2]}) is None
    assert "could not be read" in caplog.text and 12 not in fanout._told
    shared = digest.Digest("T", 2, 2, "", (), (), ())
    bell = {"type": "conv.changed", "start": (1, 1), "digest": shared}
    carried = fanout.carried(12, bell)
    assert carried is not None and carried[1] is shared  # as it came, through one process
