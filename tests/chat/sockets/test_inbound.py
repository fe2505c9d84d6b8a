"""chat.sockets.inbound: every frame a browser may send becomes a typed action or a refusal."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chat.services import messages
from chat.sockets import inbound
from chat.sockets.inbound import (
    Approve,
    Cancel,
    Deny,
    FrameBudget,
    FrameError,
    Retry,
    Send,
    Stop,
    Sync,
)

LIMIT = 100
CONVERSATION = 7


def parse(content: object) -> object:
    return inbound.parse(content, conversation_id=CONVERSATION, max_chars=LIMIT)


def parse_text(text: str | None, data: bytes | None = None) -> object:
    return parse(inbound.decode(text, data, max_chars=LIMIT))


@pytest.mark.parametrize(
    ("content", "action"),
    [
        ({"type": "sync", "seq": 0, "rev": 3}, Sync(seq=0, rev=3)),
        ({"type": "send", "text": "hello"}, Send(text="hello")),
        ({"type": "stop", "message": 5}, Stop(message=5)),
        ({"type": "retry", "message": 5}, Retry(message=5)),
        ({"type": "cancel", "pair": 9}, Cancel(pair=9)),
        ({"type": "approve", "pair": 9}, Approve(pair=9)),
        ({"type": "deny", "pair": 9, "note": "no"}, Deny(pair=9, note="no")),
        ({"type": "deny", "pair": 9}, Deny(pair=9, note="")),
    ],
)
def test_it_parses_every_action(content: dict[str, object], action: object) -> None:
    assert parse(content) == action


def test_it_ignores_unknown_fields_such_as_htmx_headers() -> None:
    frame = {"type": "send", "text": "hi", "HEADERS": {"HX-Request": "true"}, "extra": [1]}
    assert parse(frame) == Send(text="hi")


@pytest.mark.parametrize(
    ("text", "data", "error"),
    [
        (None, b"\x00\x01", inbound.NOT_TEXT),
        (None, None, inbound.NOT_TEXT),
        ("{not json", None, inbound.NOT_JSON),
        ("", None, inbound.NOT_JSON),
        ("[" * 100_000 + "]" * 100_000, None, inbound.NOT_JSON),  # nesting beyond recursion
        ("1" * 5000, None, inbound.NOT_JSON),  # beyond Python's int digit limit
        ("[1, 2]", None, inbound.NOT_OBJECT),
        ('"send"', None, inbound.NOT_OBJECT),
        ("null", None, inbound.NOT_OBJECT),
    ],
)
def test_it_refuses_frames_that_are_not_json_objects(
    text: str | None, data: bytes | None, error: str
) -> None:
    assert parse_text(text, data) == FrameError(error)


def test_it_refuses_an_oversized_frame_before_decoding_it() -> None:
    limit = inbound.max_frame_chars(LIMIT)
    result = parse_text(json.dumps({"type": "send", "text": "x" * limit}))
    assert result == FrameError(f"That message is too long (limit {LIMIT:,} characters).")


def test_it_leaves_room_in_a_frame_for_the_longest_escaped_message() -> None:
    text = "\U0001f600" * 20_000
    frame = json.dumps({"type": "send", "text": text})  # ascii escapes: 12 chars each
    assert inbound.parse(
        inbound.decode(frame, None, max_chars=20_000), conversation_id=1, max_chars=20_000
    ) == Send(text=text)


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ({}, inbound.NO_TYPE),
        ({"text": "hi"}, inbound.NO_TYPE),
        ({"type": "explode"}, inbound.UNKNOWN_ACTION),
        ({"type": 3}, inbound.UNKNOWN_ACTION),
        ({"type": None}, inbound.UNKNOWN_ACTION),
        ({"type": ["send"]}, inbound.UNKNOWN_ACTION),
    ],
)
def test_it_refuses_a_missing_or_unknown_type(content: dict[str, object], error: str) -> None:
    assert parse(content) == FrameError(error)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ({"type": "send"}, 'A "send" frame needs a "text" field.'),
        ({"type": "sync", "seq": 1}, 'A "sync" frame needs a "rev" field.'),
        ({"type": "stop"}, 'A "stop" frame needs a "message" field.'),
        ({"type": "retry"}, 'A "retry" frame needs a "message" field.'),
        ({"type": "cancel"}, 'A "cancel" frame needs a "pair" field.'),
        ({"type": "approve"}, 'A "approve" frame needs a "pair" field.'),
    ],
)
def test_it_names_a_missing_field(content: dict[str, object], words: str) -> None:
    assert parse(content) == FrameError(words)


@pytest.mark.parametrize("text", [3, 2.5, None, True, ["hi"], {"text": "hi"}])
def test_it_refuses_text_that_is_not_a_string(text: object) -> None:
    assert parse({"type": "send", "text": text}) == FrameError('"text" must be a string.')


@pytest.mark.parametrize("pair", ["3", "abc", 2.0, 2.5, True, False, None, -1, 0, 2**63, [1]])
def test_it_refuses_an_id_that_is_not_a_positive_whole_number(pair: object) -> None:
    assert parse({"type": "cancel", "pair": pair}) == FrameError(
        '"pair" must be a positive whole number.'
    )


@pytest.mark.parametrize("seq", [-1, "0", 1.5, None, True])
def test_it_refuses_a_cursor_that_is_not_a_whole_number(seq: object) -> None:
    assert parse({"type": "sync", "seq": seq, "rev": 0}) == FrameError(
        '"seq" must be a whole number, 0 or more.'
    )


@pytest.mark.parametrize("text", ["", " ", "\n\t  \n", "\u3000"])
def test_it_refuses_an_empty_or_blank_message(text: str) -> None:
    assert parse({"type": "send", "text": text}) == FrameError(messages.EMPTY_MESSAGE)


def test_it_refuses_a_message_over_the_limit_and_says_the_limit() -> None:
    assert parse({"type": "send", "text": "x" * LIMIT}) == Send(text="x" * LIMIT)
    assert parse({"type": "send", "text": "x" * (LIMIT + 1)}) == FrameError(
        f"That message is too long ({LIMIT + 1} characters; limit {LIMIT} characters)."
    )


@pytest.mark.parametrize("text", ["a\x00b", "lone \ud800 surrogate"])
def test_it_refuses_text_the_database_cannot_store(text: str) -> None:
    assert parse({"type": "send", "text": text}) == FrameError(inbound.BAD_CHARACTERS)
    assert parse({"type": "deny", "pair": 1, "note": text}) == FrameError(inbound.BAD_CHARACTERS)


def test_it_refuses_a_deny_note_that_is_not_a_string() -> None:
    assert parse({"type": "deny", "pair": 1, "note": 5}) == FrameError('"note" must be a string.')


@pytest.mark.parametrize("other", [8, 0, -7, "7", 7.0, True, None, 2**80])
def test_it_refuses_a_frame_that_names_another_conversation(other: object) -> None:
    # The same words whatever the id: nothing tells whether that conversation exists.
    for content in (
        {"type": "send", "text": "hi", "conversation": other},
        {"type": "cancel", "pair": 1, "conversation": other},
    ):
        assert parse(content) == FrameError(inbound.OTHER_CONVERSATION)


def test_it_accepts_a_frame_that_names_its_own_conversation() -> None:
    assert parse({"type": "send", "text": "hi", "conversation": CONVERSATION}) == Send(text="hi")


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
_frames = st.fixed_dictionaries(
    {"type": st.sampled_from(["sync", "send", "stop", "retry", "cancel", "approve", "deny"])},
    optional={k: _json for k in ("text", "seq", "rev", "message", "pair", "note", "conversation")},
)


@given(content=_json | _frames)
def test_it_answers_any_json_value_with_an_action_or_an_error(content: object) -> None:
    result = parse(content)
    assert isinstance(result, FrameError | Sync | Send | Stop | Retry | Cancel | Approve | Deny)
    if isinstance(result, FrameError):
        assert result.text


@given(text=st.text(max_size=300))
def test_it_never_raises_on_random_text_frames(text: str) -> None:
    assert parse_text(text) is not None


def test_it_lets_a_burst_through_then_refills_with_time() -> None:
    budget = FrameBudget(burst=3, per_second=2.0)
    assert [budget.take(0.0) for _ in range(4)] == [True, True, True, False]
    assert budget.take(0.4) is False  # 0.8 of a token so far
    assert budget.take(0.5) is True
    assert budget.take(100.0) and budget.take(100.0) and budget.take(100.0)
    assert budget.take(100.0) is False  # the bucket never holds more than the burst


def test_it_keeps_the_pages_ref_of_a_send_and_refuses_a_strange_one() -> None:
    assert parse({"type": "send", "text": "hi", "ref": "s-1_a"}) == Send(text="hi", ref="s-1_a")
    for ref in ["", None, 5, "x" * 33, "a b", "<i>"]:
        expected = Send(text="hi") if ref == "" else FrameError(inbound.BAD_REF)
        assert parse({"type": "send", "text": "hi", "ref": ref}) == expected


def test_it_lets_the_server_take_frames_well_past_the_message_limit() -> None:
    assert inbound.server_frame_bytes(20_000) >= 4 * 1024 * 1024
    assert inbound.server_frame_bytes(10**6) >= 4 * inbound.max_frame_chars(10**6)
