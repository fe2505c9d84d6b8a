"""chat.markdown_stream: finished blocks once, the open block per frame, always what a full
render of the text so far would show, and always sanitized, whatever half of it was written."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chat import markdown_stream
from chat.markdown_stream import Progress, render, step
from chat.rendering import markdown_to_html
from tests.chat.test_rendering import HOSTILE
from tests.security.inert import dangers

FRAGMENTS = [
    "**",
    "*",
    "_",
    "`",
    "```",
    "```py",
    "~~~",
    "\n",
    "\n\n",
    "\r\n",
    "- ",
    "* ",
    "1. ",
    "2) ",
    "  ",
    "    ",
    "\t",
    "| a | b |",
    "|---|:-:|",
    "| 1 | 2 |",
    "# ",
    "## ",
    "> ",
    "---",
    "===",
    "~~",
    "word",
    "bold",
    " ",
    "<",
    "&amp;",
    "[a](https://example.com)",
    "[r]: https://example.com",
    "[r]",
    "\\",
    *HOSTILE,
]

markdownish = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4)), max_size=30).map(
    "".join
)

VOID = {"br", "hr", "img", "input"}


class _Balance(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(f"</{tag}> closes nothing open")


def well_formed(html: str) -> bool:
    parser = _Balance()
    parser.feed(html)
    parser.close()
    return not parser.errors and not parser.stack


def stream(text: str, cuts: list[int]) -> tuple[list[str], str]:
    """Every frame of ``text`` cut at ``cuts``, as a tab would hold it: blocks, open part."""
    sent: list[str] = []
    progress = Progress()
    open_html = ""
    for cut in [*sorted(cuts), len(text)]:
        result = step(text[:cut], progress)
        assert result.progress.blocks == progress.blocks + len(result.new_blocks)
        sent.extend(result.new_blocks)
        open_html = result.open_html
        progress = result.progress
        assert "".join(sent) + open_html == markdown_to_html(text[:cut])
    return sent, open_html


@settings(max_examples=400, deadline=None)
@given(markdownish, st.lists(st.integers(min_value=0, max_value=400), max_size=12))
def test_every_frame_shows_what_a_full_render_of_the_text_so_far_shows(
    text: str, cuts: list[int]
) -> None:
    sent, open_html = stream(text, [min(c, len(text)) for c in cuts])
    assert "".join(sent) + open_html == markdown_to_html(text)


@settings(max_examples=300, deadline=None)
@given(markdownish, st.integers(min_value=0, max_value=400))
def test_any_half_written_prefix_is_sanitized_and_well_formed(text: str, cut: int) -> None:
    result = step(text[: min(cut, len(text))], Progress())
    for html in [*result.new_blocks, result.open_html]:
        assert dangers(html, markdown=True) == []
        assert well_formed(html)


@settings(max_examples=200, deadline=None)
@given(markdownish)
def test_one_character_at_a_time_sends_each_block_once(text: str) -> None:
    sent, open_html = stream(text, list(range(len(text))))
    assert "".join(sent) + open_html == render(text).html


def test_a_paragraph_is_finished_when_the_next_block_starts_on_a_whole_line() -> None:
    first = step("Hello **world**\n\n- a", Progress())
    assert first.new_blocks == ()  # "- a" may still become anything
    second = step("Hello **world**\n\n- a\n", Progress())
    assert second.new_blocks == ("<p>Hello <strong>world</strong></p>\n",)
    assert second.open_html == "<ul>\n<li>a</li>\n</ul>\n"
    assert second.progress == Progress(blocks=1, offset=len("Hello **world**\n\n"))


def test_an_unclosed_fence_is_one_open_block() -> None:
    result = step("Intro\n\n```py\nx = 1\n\ny = 2\n", Progress())
    assert result.new_blocks == ("<p>Intro</p>\n",)
    assert result.open_html == '<pre><code class="language-py">x = 1\n\ny = 2\n</code></pre>\n'


def test_a_list_stays_open_across_a_blank_line_until_another_block_follows() -> None:
    loose = step("- a\n\n- b\n", Progress())
    assert loose.new_blocks == ()
    after = step("- a\n\n- b\n\nDone\n", Progress())
    assert after.new_blocks == ("<ul>\n<li>\n<p>a</p>\n</li>\n<li>\n<p>b</p>\n</li>\n</ul>\n",)


def test_a_table_is_finished_only_when_another_block_follows() -> None:
    table = "| a | b |\n|---|---|\n| 1 | 2 |\n"
    assert step(table, Progress()).new_blocks == ()
    assert step(table + "\n", Progress()).new_blocks == ()
    done = step(table + "\nAfter\n", Progress())
    assert len(done.new_blocks) == 1 and done.new_blocks[0].startswith("<table>")


def test_a_line_that_may_still_become_a_fence_or_code_does_not_finish_a_paragraph() -> None:
    # "```" may yet be inline code ("```x```"), continuing the paragraph.
    assert step("para\n```", Progress()).new_blocks == ()
    assert step("para\n```x```", Progress()).open_html == "<p>para\n<code>x</code></p>\n"


def test_reference_definitions_are_plain_text_so_no_sent_block_changes() -> None:
    assert render("[r]\n\n[r]: https://example.com\n").html == markdown_to_html(
        "[r]\n\n[r]: https://example.com\n"
    )
    assert "<a" not in markdown_to_html("[r]\n\n[r]: https://example.com\n")


def test_later_steps_parse_only_the_open_part() -> None:
    first = step("# Title\n\nBody\n", Progress())
    assert first.progress.offset == len("# Title\n\n")
    # The finished heading is not looked at again: the text before the offset may be anything.
    assert step("XXXXXXXXXBody and more", first.progress).open_html == "<p>Body and more</p>\n"


def test_a_frame_sanitizes_again_only_the_block_being_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The blocks before the last one in the open part render the same every frame (and then
    finish unchanged): they are sanitized once, only the last block each frame."""
    calls: list[str] = []

    def sanitize(raw: str) -> str:
        calls.append(raw)
        return raw

    monkeypatch.setattr(markdown_stream, "sanitize", sanitize)
    markdown_stream._sanitized.cache_clear()
    text = "A *list*:\n\n- one\n- two\n\nAnd *more"
    progress = Progress()
    for end in range(len(text) - 3, len(text) + 1):
        progress = step(text[:end], progress).progress
    blocks = ["<p>A <em>list</em>:</p>\n", "<ul>\n<li>one</li>\n<li>two</li>\n</ul>\n"]
    assert [c for c in calls if c in blocks] == blocks  # once each, though open every frame
    assert len(calls) == len(blocks) + 4  # and the last block, once a frame
