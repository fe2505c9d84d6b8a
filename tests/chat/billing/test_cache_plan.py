from __future__ import annotations

from chat.billing.cache_plan import keepalive_due, max_keepalives


def test_keepalives_stop_where_their_reads_would_cost_more_than_one_miss() -> None:
    # a miss costs 1.25 - 0.1 = 1.15 input prices per token; a keep-alive 0.1
    assert max_keepalives() == 11


def test_due_only_in_the_last_half_minute_of_the_lifetime_while_a_tool_pends() -> None:
    def due(now: float) -> bool:
        return keepalive_due(now=now, last_request_at=0.0, tools_pending=True, sent=0)

    assert not due(269.0)
    assert due(270.0)
    assert not due(300.0)  # expired: a request would only write


def test_never_due_when_nothing_pends_or_the_wait_used_its_keepalives() -> None:
    assert not keepalive_due(now=280.0, last_request_at=0.0, tools_pending=False, sent=0)
    assert not keepalive_due(now=280.0, last_request_at=0.0, tools_pending=True, sent=11)
    assert not keepalive_due(now=280.0, last_request_at=None, tools_pending=True, sent=0)
