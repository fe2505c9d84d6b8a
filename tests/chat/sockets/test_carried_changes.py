"""Doorbells that carry their change (``TANDEM_CARRY_CHANGES``): tabs that follow along read
nothing, and end as a read would leave them (chat.sockets.fanout.describe, TabState.takes)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from channels.db import database_sync_to_async as db

from chat.queries import thread
from chat.runtime import engine
from chat.sockets import fanout
from chat.sockets.tab_state import TabState
from tests.conftest import frames_until

pytestmark = pytest.mark.django_db(transaction=True)

DONE = "call finished: 42"


@pytest.fixture(autouse=True)
def carrying(settings: Any) -> None:
    settings.TANDEM_CARRY_CHANGES = True


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The tabs' own reads of the changes (``resync`` of each), as they happen."""
    seen: list[bool] = []
    original = fanout._load

    def load(conversation_id: int, seq: int, rev: int, resync: bool) -> Any:
        seen.append(resync)
        return original(conversation_id, seq, rev, resync)

    monkeypatch.setattr(fanout, "_load", load)
    return seen


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each carried change was taken by the tab that heard it."""
    seen: list[bool] = []
    original = TabState.takes

    def takes(self: TabState, start: Any, digest: Any) -> bool:
        seen.append(original(self, start, digest))
        return seen[-1]

    monkeypatch.setattr(TabState, "takes", takes)
    return seen


def _cursor(frames: list[str]) -> tuple[int, int]:
    seq, rev = re.findall(r'id="sync-cursor".*?data-seq="(\d+)" data-rev="(\d+)"', "".join(frames))[
        -1
    ]
    return int(seq), int(rev)


async def test_tabs_that_follow_along_take_each_change_from_its_doorbell(
    connect: Any, owner: Any, conversation: Any, reads: list[bool], taken: list[bool]
) -> None:
    """A tool call (its card stored mid-reply, run, flushed, answered) and a second message:
    after the first bell, every change reaches both tabs in its doorbell."""
    tabs = [await connect(owner, conversation.pk) for _ in range(2)]
    for tab in tabs:  # each page's sync answered: both at the same cursor
        await frames_until(tab, lambda f: "sync-cursor" in f)
    await tabs[0].send_json_to({"type": "send", "text": "calculate 6*7"})
    shown = [
        await frames_until(tab, lambda f: "kind-reply status-complete" in f and DONE in f)
        for tab in tabs
    ]
    await engine.idle()
    await tabs[1].send_json_to({"type": "send", "text": "thanks, and now a short one"})
    for index, tab in enumerate(tabs):
        shown[index] += await frames_until(
            tab, lambda f: 'kind-reply status-complete" data-seq="7"' in f
        )
    await engine.idle()

    # Each tab's sync; then the first bell, which found no cursor told yet (a page's sync
    # starts where the page says), read once for both tabs or once each; nothing after.
    assert reads[:2] == [True, True] and reads[2:] in ([False], [False, False])
    # Every later bell, for both tabs. (A digest carrying a reply whose live frames went
    # further would be read instead; here each reply's text is complete before its next bell.)
    assert len(taken) >= 2 * 5 and all(taken)
    cursor = await db(thread.cursor)(conversation.pk)
    for frames in shown:
        assert _cursor(frames) == cursor
        assert sum(f.count('<section id="pair-') for f in frames) >= 1
    # A tab that opens now reads exactly the thread the followers were sent.
    late = await connect(owner, conversation.pk)
    resynced = await frames_until(late, lambda f: "sync-cursor" in f)
    assert _cursor(resynced) == cursor
