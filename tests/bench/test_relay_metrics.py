"""The relay benchmark's pure helpers: stamped tokens, a reply's trace, the figures."""

from __future__ import annotations

import pytest

from tests.bench.profile_summary import report, summarise
from tests.bench.relay_client import article_html
from tests.bench.relay_metrics import (
    ReplyTrace,
    collections_between,
    fmt_pair,
    hops_between,
    ordered_problems,
    p50_p99_ms,
    parse_tokens,
    repeat_summary,
    token_text,
)
from tests.bench.tandem_server import statement_kind


def stamped(first: int, last: int, emitted_us: int = 1_000) -> str:
    return "".join(token_text(i, emitted_us + i) for i in range(first, last))


def test_tokens_round_trip_even_when_markdown_trims_the_last_space() -> None:
    text = stamped(0, 3)
    assert parse_tokens(text) == [(0, 1000), (1, 1001), (2, 1002)]
    assert parse_tokens(f"<p>{text.strip()}</p>") == [(0, 1000), (1, 1001), (2, 1002)]


def test_ordered_problems_names_doubles_gaps_and_losses() -> None:
    assert ordered_problems([0, 1, 2], 3, complete=True) == []
    assert ordered_problems([0, 1], 3, complete=False) == []
    assert ordered_problems([0, 1], 3, complete=True) == ["1 of 3 tokens lost"]
    assert ordered_problems([0, 1, 1, 2], 3, complete=True) == ["1 tokens doubled"]
    assert ordered_problems([0, 2, 1], 3, complete=True) == ["tokens out of order or with a gap"]
    assert ordered_problems([0, 2], 3, complete=False) == ["tokens out of order or with a gap"]


def test_a_trace_measures_from_emission_and_from_the_send() -> None:
    trace = ReplyTrace(sent_ns=500_000)  # 0.5 ms
    trace.delta(token_text(0, 1_000), now_ns=3_000_000)  # emitted at 1 ms, seen at 3 ms
    trace.delta(token_text(1, 2_000), now_ns=7_000_000)
    assert trace.latencies_s() == [0.002, 0.005]
    assert trace.ttft_s() == 0.0025


def test_a_snapshot_replaces_the_live_text_and_the_first_sighting_counts() -> None:
    trace = ReplyTrace(sent_ns=0)
    trace.delta(stamped(0, 2), now_ns=10_000_000)
    trace.snapshot(stamped(0, 3), now_ns=20_000_000)  # a resync: the whole text so far
    trace.finished(stamped(0, 3), now_ns=30_000_000)
    assert trace.problems(3) == []
    assert sorted(trace.first_seen_ns.items()) == [(0, 10**7), (1, 10**7), (2, 2 * 10**7)]


def test_a_repeated_delta_or_a_missing_token_is_a_problem() -> None:
    doubled = ReplyTrace(sent_ns=0)
    doubled.delta(stamped(0, 2), now_ns=1)
    doubled.delta(stamped(1, 3), now_ns=2)
    doubled.finished(stamped(0, 3), now_ns=3)
    assert doubled.problems(3) == ["live text: 1 tokens doubled"]
    lost = ReplyTrace(sent_ns=0)
    lost.delta(stamped(0, 2), now_ns=1)
    lost.finished(stamped(0, 2), now_ns=3)
    assert lost.problems(3) == ["final text: 1 of 3 tokens lost"]
    unfinished = ReplyTrace(sent_ns=0)
    assert unfinished.problems(3) == ["the reply never finished at the tab"]


def test_article_html_cuts_one_message_out_of_a_frame() -> None:
    frame = '<article id="msg-4" class="a">w0t1</article><article id="msg-5">w9t9</article>'
    assert article_html(frame, 4) == '<article id="msg-4" class="a">w0t1</article>'
    assert article_html(frame, 5) == '<article id="msg-5">w9t9</article>'
    assert article_html(frame, 6) == ""


def test_percentile_pairs_and_their_text() -> None:
    assert p50_p99_ms([]) is None
    assert p50_p99_ms([0.001 * i for i in range(1, 101)]) == (50.0, 99.0)
    assert fmt_pair((12.3, 1500.0)) == "12 ms / 1.50 s"
    assert fmt_pair(None) == "-"


def test_a_profile_summary_counts_threads_self_and_inclusive_samples() -> None:
    raw = (
        "thread (0x1);main (a.py:1);run (b.py:2);query (c.py:3) 6\n"
        "thread (0x1);main (a.py:1);run (b.py:9) 2\n"
        "thread (0x2);worker (d.py:1);query (c.py:4) 2\n"
    )
    total, threads, own, inclusive = summarise(raw)
    assert total == 10
    assert threads == {"thread (0x1)": 8, "thread (0x2)": 2}
    assert own == {"query (c.py)": 8, "run (b.py)": 2}
    assert inclusive["main (a.py)"] == 8 and inclusive["query (c.py)"] == 8
    assert report(raw).splitlines()[0] == "10 samples"


def test_statements_are_counted_by_verb_and_table() -> None:
    assert statement_kind('SELECT "chat_message"."id" FROM "chat_message" WHERE 1') == (
        "SELECT chat_message"
    )
    assert statement_kind('INSERT INTO "chat_message" ("seq") VALUES (1)') == "INSERT chat_message"
    assert statement_kind('UPDATE "chat_conversation" SET "rev" = 2') == "UPDATE chat_conversation"
    assert statement_kind('DELETE FROM "django_session" WHERE 1') == "DELETE django_session"
    assert statement_kind('SAVEPOINT "s1"') == "SAVEPOINT"
    assert statement_kind("") == "?"


def test_repeat_summary_gives_each_figures_median_and_range_per_n_and_server() -> None:
    figures = [
        (50, "bare", 42.0, 10.0, None),
        (50, "Tandem", 72.0, 142.0, 2.2),
        (50, "bare", 43.0, 12.0, None),
        (50, "Tandem", 150.0, 1500.0, 2.0),
        (50, "bare", 41.0, 11.0, None),
        (50, "Tandem", 53.0, None, 2.1),
    ]
    lines = repeat_summary(figures).splitlines()
    assert lines[2] == "| 50 | bare | 3 | 42 ms (41 ms to 43 ms) | 11 ms (10 ms to 12 ms) | - |"
    assert lines[3] == (
        "| 50 | Tandem | 3 | 72 ms (53 ms to 150 ms) | 821 ms (142 ms to 1.50 s) "
        "| 2.1x (2.0x to 2.2x) |"
    )


def test_hops_between_two_readings_are_the_hops_made_meanwhile() -> None:
    before = {"_load": [3, 0.003, 0.009], "sidebar": [2, 0.001, 0.002]}
    after = {"_load": [5, 0.007, 0.019], "sidebar": [2, 0.001, 0.002], "begin": [1, 0.002, 0.004]}
    between = hops_between(before, after)
    assert between.keys() == {"_load", "begin"}  # the sidebar made none meanwhile
    assert between["_load"] == pytest.approx([2, 0.004, 0.010])
    assert between["begin"] == pytest.approx([1, 0.002, 0.004])


def test_collections_between_two_readings_are_the_ones_made_meanwhile() -> None:
    before = {"gen0": [10, 0.02, 0.004], "gen2": [1, 0.2, 0.2]}
    after = {"gen0": [14, 0.03, 0.003], "gen1": [1, 0.005, 0.005], "gen2": [1, 0.2, 0.0]}
    between = collections_between(before, after)
    assert between.keys() == {"gen0", "gen1"}  # no full collection meanwhile
    assert between["gen0"] == pytest.approx([4, 0.01, 0.003])
    assert between["gen1"] == pytest.approx([1, 0.005, 0.005])
