"""chat.runtime.events: doorbells ring only after the change commits, to the right groups."""

from __future__ import annotations

import time

import pytest
from django.db import transaction

from chat.runtime import events
from tests.conftest import Subscription


def test_it_names_a_group_per_conversation_and_per_user() -> None:
    assert events.conversation_group(12) == "conv-12"
    assert events.user_group(3) == "user-3"


@pytest.mark.django_db(transaction=True)
def test_it_rings_the_conversation_and_its_owner_after_commit() -> None:
    received = Subscription(events.conversation_group(12), events.user_group(3))
    with transaction.atomic():
        events.ring(12, 3)
        assert received() == []  # nothing before the commit
        committing = time.time()
    got = received()
    assert got == [
        {"type": "conv.changed", "at": got[0]["at"]},
        {"type": "convlist.changed", "conversation": 12},
    ]
    assert committing <= got[0]["at"] <= time.time()  # rung after the commit


@pytest.mark.django_db(transaction=True)
def test_it_never_rings_for_a_change_rolled_back() -> None:
    received = Subscription(events.conversation_group(12))
    with pytest.raises(RuntimeError), transaction.atomic():
        events.ring(12)
        raise RuntimeError("rolled back")
    assert received() == []


@pytest.mark.django_db(transaction=True)
def test_one_bell_rings_each_conversation_once_after_every_commit_inside() -> None:
    """One database hop of several commits (a message stored, then its reply begun) rings
    once, at the end, so the tabs read once; the owner's list hears of it if any ring said so."""
    received = Subscription(events.conversation_group(12), events.user_group(3))
    with events.one_bell():
        with transaction.atomic():
            events.ring(12)
        with transaction.atomic():
            events.ring(12, 3)
        with events.one_bell(), transaction.atomic():  # nested: the outer block rings
            events.ring(12)
        assert received() == []
    got = received()
    assert [m["type"] for m in got] == ["conv.changed", "convlist.changed"]


@pytest.mark.django_db(transaction=True)
def test_one_bell_still_rings_what_committed_before_an_error() -> None:
    received = Subscription(events.conversation_group(12))
    with pytest.raises(RuntimeError), events.one_bell():
        with transaction.atomic():
            events.ring(12)
        raise RuntimeError("after the commit")
    assert [m["type"] for m in received()] == ["conv.changed"]
