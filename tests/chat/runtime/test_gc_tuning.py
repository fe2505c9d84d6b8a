"""chat.runtime.gc_tuning: a server's collector, start-up frozen, young collections fewer."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest
from django.test import override_settings

from chat.runtime import gc_tuning


@pytest.fixture
def collector() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_it_freezes_what_exists_and_collects_the_young_less_often(collector: None) -> None:
    before = gc.get_threshold()
    alive = [object()]  # a container the collector tracks
    with override_settings(TANDEM_GC_FREEZE=True, TANDEM_GC_GEN0_THRESHOLD=20_000):
        gc_tuning.tune()
    assert gc.get_freeze_count() > 0
    assert not any(o is alive for o in gc.get_objects())  # frozen: no collection walks it
    assert gc.get_threshold() == (20_000, before[1], before[2])
    assert gc.isenabled()  # cycles made after start-up are still collected


def test_it_leaves_the_collector_alone_when_told_to(collector: None) -> None:
    before = gc.get_threshold()
    with override_settings(TANDEM_GC_FREEZE=False, TANDEM_GC_GEN0_THRESHOLD=0):
        gc_tuning.tune()
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before


def test_a_cycle_made_after_tuning_is_still_collected(collector: None) -> None:
    with override_settings(TANDEM_GC_FREEZE=True, TANDEM_GC_GEN0_THRESHOLD=20_000):
        gc_tuning.tune()

    class Node:
        other: object = None

    a, b = Node(), Node()
    a.other, b.other = b, a
    watch = weakref.ref(a)
    del a, b
    gc.collect()
    assert watch() is None
