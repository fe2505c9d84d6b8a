"""chat.markdown_stream's plain-prose path: what it writes without parsing or sanitizing is
exactly what the full path (Markdown-it, then nh3) would send, frame by frame, and anything
that could carry markup takes the full path."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from chat.markdown_stream import (
    _NOT_PROSE,
    Progress,
    _full_step,
    _is_prose,
    _plain_step,
    normalize,
    step,
)

PROSE = "aZé9 ,.;:?!'\"/()%@$=+-\u2013\u2014\u2018\u2019\u201c\u201d\u2026"
# Near misses: Markdown or HTML syntax, whitespace that is not a plain space, look-alikes.
SYNTAX = "*_`~[]<>&\\|#\t\xa0\r\u0301\x00\u2028"
prose = st.lists(st.sampled_from([*PROSE, "\n", "\n\n", "  ", "word "]), max_size=40).map("".join)
near = st.lists(st.sampled_from([*PROSE, *SYNTAX, "\n", "\n\n", "1. ", "- "]), max_size=40).map(
    "".join
)
cuts = st.lists(st.integers(min_value=0, max_value=80), max_size=10)


def assert_same_frames(text: str, at: list[int]) -> None:
    """Streamed with the plain path where it applies, every frame equals the full path's."""
    progress = Progress()
    for cut in [*sorted(at), len(text)]:
        ours = step(text[:cut], progress)
        tail = normalize(text[:cut])[progress.offset :]
        assert ours == _full_step(tail, progress)
        progress = ours.progress


@settings(max_examples=500, deadline=None)
@given(prose, cuts)
@example("w1t1783 w2t1800 w3t1833 ", [4, 9, 16])
@example("Para one.\n\nPara two\nstill two  \n\nthree", [10, 11, 12, 20, 33, 35])
@example('He said "hi" \u2014 it\u2019s 5% (or $4).\n', [])
def test_plain_prose_frames_equal_the_full_render(text: str, at: list[int]) -> None:
    assert_same_frames(text, at)


@settings(max_examples=500, deadline=None)
@given(near, cuts)
@example("a *b*", [])
@example("a\n===", [])
@example("a\n- b", [])
@example("a\n1. b", [])
@example("a <b>x</b> &amp;", [])
@example("a\xa0b", [])
def test_text_with_any_syntax_frames_equal_the_full_render(text: str, at: list[int]) -> None:
    assert_same_frames(text, at)


def test_prose_takes_the_plain_path() -> None:
    text = "First paragraph, with \u201cquotes\u201d.\n\nSecond one\ngoes on \u2014 and on "
    result = _plain_step(text, Progress())
    assert result is not None
    assert result.new_blocks == ("<p>First paragraph, with \u201cquotes\u201d.</p>\n",)
    assert result.open_html == "<p>Second one\ngoes on \u2014 and on</p>\n"


def test_a_finished_paragraph_is_sent_once_the_next_starts_on_a_complete_line() -> None:
    result = _plain_step("One.\n\nTwo.\nThree", Progress(blocks=2, offset=10))
    assert result is not None
    assert result.new_blocks == ("<p>One.</p>\n",)
    assert result.open_html == "<p>Two.\nThree</p>\n"
    assert result.progress == Progress(blocks=3, offset=16)


def test_anything_that_could_carry_markup_takes_the_full_path() -> None:
    for text in ["a *b*", "a_b", "a `b`", "a [b](c)", "a <b>", "a &amp;", "a\\b", "1. a", "a\tb"]:
        assert _plain_step(text, Progress()) is None, text
    assert _plain_step("a  \nb", Progress()) is None  # a hard break


def test_the_ascii_shortcut_accepts_exactly_the_characters_the_full_test_does() -> None:
    for code in range(0x10000):
        char = chr(code)
        if 0xD800 <= code < 0xE000:
            continue  # lone surrogates
        full = char != "_" and _NOT_PROSE.search(char) is None
        assert _is_prose(char) == full == _is_prose(char + "\u2014"), repr(char)
    assert not any(_is_prose(c) for c in "*_`~[]<>&\\|#\t\r\xa0")
