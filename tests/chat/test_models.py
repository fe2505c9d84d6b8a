"""ToolPair's lifecycle: the open and finished sets, the legal moves, and ``move_to``."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from chat.models import IllegalTransition, ToolPair

S = ToolPair.Status
STATUSES = [str(s) for s in S]
LEGAL = [(a, b) for a, targets in ToolPair.TRANSITIONS.items() for b in sorted(targets)]
ILLEGAL = [(a, b) for a in STATUSES for b in STATUSES if b not in ToolPair.TRANSITIONS[a]]


def _stored(status: str) -> ToolPair:
    """A pair as loaded from the database (no row needed: the machine is pure)."""
    pair = ToolPair(tool_name="calculate", tool_use_id="toolu_1", status=status)
    pair._state.adding = False
    return pair


def test_it_splits_every_status_into_open_or_finished() -> None:
    assert ToolPair.OPEN.isdisjoint(ToolPair.FINISHED)
    assert set(STATUSES) == ToolPair.OPEN | ToolPair.FINISHED
    assert set(ToolPair.TRANSITIONS) == set(STATUSES)
    assert ToolPair.PENDING_RUN < ToolPair.OPEN and set(STATUSES) >= ToolPair.INITIAL


def test_it_never_leaves_a_finished_status_except_a_retry_of_a_failure() -> None:
    moving = {s for s in ToolPair.FINISHED if ToolPair.TRANSITIONS[s]}
    assert moving == {S.FAILED}
    assert ToolPair.TRANSITIONS[S.FAILED] == {S.QUEUED}


@pytest.mark.parametrize(("before", "after"), LEGAL)
def test_it_makes_every_legal_move_and_records_it(before: str, after: str) -> None:
    pair = _stored(before)
    pair.move_to(after, "because", by="test")
    assert pair.status == after
    assert pair.timeline[-1]["event"] == "because" and pair.timeline[-1]["by"] == "test"
    assert (pair.finished_at is not None) == (after in ToolPair.FINISHED)


@pytest.mark.parametrize(("before", "after"), ILLEGAL)
def test_it_refuses_every_illegal_move(before: str, after: str) -> None:
    pair = _stored(before)
    with pytest.raises(IllegalTransition):
        pair.move_to(after, "nope")
    assert pair.status == before and pair.timeline == []


@pytest.mark.parametrize("status", sorted(ToolPair.INITIAL))
def test_it_lets_a_new_pair_start_in_an_initial_status(status: str) -> None:
    pair = ToolPair(tool_name="calculate", tool_use_id="toolu_1")
    pair.move_to(status, "stored")
    assert pair.status == status


@pytest.mark.parametrize("status", [S.RUNNING, S.SUCCEEDED, S.TIMED_OUT, S.CANCELLED])
def test_it_refuses_to_store_a_pair_in_a_later_status(status: str) -> None:
    with pytest.raises(IllegalTransition):
        ToolPair(tool_name="calculate", tool_use_id="toolu_1").move_to(status, "stored")


def test_it_counts_the_attempt_when_a_run_starts() -> None:
    pair = _stored(S.QUEUED)
    pair.progress, pair.progress_text = 0.5, "old"
    now = timezone.now()
    pair.move_to(S.RUNNING, "started", now=now)
    assert (pair.attempts, pair.started_at, pair.heartbeat_at) == (1, now, now)
    assert (pair.progress, pair.progress_text) == (None, "")


def test_it_fills_the_progress_of_a_success() -> None:
    pair = _stored(S.RUNNING)
    pair.move_to(S.SUCCEEDED, "succeeded")
    assert pair.progress == 1.0


def test_it_forgets_the_failed_result_when_a_failure_is_retried() -> None:
    pair = _stored(S.FAILED)
    pair.result_content, pair.is_error, pair.finished_at = "boom", True, timezone.now()
    pair.runner, pair.attempts = "host:1", 1
    pair.move_to(S.QUEUED, "retried")
    assert (pair.result_content, pair.is_error, pair.finished_at, pair.runner) == (
        None,
        False,
        None,
        "",
    )
    assert pair.attempts == 1


def test_it_counts_the_seconds_left_to_the_deadline_never_below_zero() -> None:
    now = timezone.now()
    pair = _stored(S.QUEUED)
    assert pair.seconds_left(now=now) is None
    pair.start_clock(30, now=now)
    assert pair.seconds_left(now=now) == 30
    assert pair.seconds_left(now=now + dt.timedelta(seconds=45)) == 0


def test_it_answers_the_templates_questions() -> None:
    assert [s for s in STATUSES if _stored(s).is_open] == [
        s for s in STATUSES if s in ToolPair.OPEN
    ]
    assert [s for s in STATUSES if _stored(s).is_pending_run] == [S.QUEUED, S.RUNNING]
    assert _stored(S.RUNNING).is_running and not _stored(S.QUEUED).is_running
    assert _stored(S.AWAITING_APPROVAL).is_awaiting_approval


@given(st.lists(st.sampled_from(STATUSES), max_size=12))
def test_any_walk_stays_on_the_legal_edges(walk: list[str]) -> None:
    pair = _stored(S.QUEUED)
    for target in walk:
        before = pair.status
        if target in ToolPair.TRANSITIONS[before]:
            pair.move_to(target, "step")
            assert pair.status == target
        else:
            with pytest.raises(IllegalTransition):
                pair.move_to(target, "step")
            assert pair.status == before
    assert len(pair.timeline) == sum(1 for e in pair.timeline if e["event"] == "step")
