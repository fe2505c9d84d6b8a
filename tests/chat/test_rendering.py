"""chat.rendering: the model's Markdown becomes HTML that cannot run script or act on the page."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chat import markdown_stream
from chat.rendering import ALLOWED_TAGS, markdown_to_html, pretty_json, result_text
from chat.sockets import outbound
from tests.security.inert import dangers, elements

HOSTILE = [
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "<iframe src=javascript:alert(1)></iframe>",
    '<a href="javascript:alert(1)">click</a>',
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](  javascript:alert(1))",
    "[click](java\tscript:alert(1))",
    "[click](jav&#x09;ascript:alert(1))",
    "[click](&#106;avascript:alert(1))",
    "[click](vbscript:msgbox(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![img](javascript:alert(1))",
    "![img](https://evil.example/track.png)",
    "<javascript:alert(1)>",
    '[click](https://example.com "t" onmouseover="alert(1)")',
    '<http://example.com/"onmouseover="alert(1)>',
    '```" onmouseover="alert(1)\ncode\n```',
    '<div hx-get="/conversations/new/" hx-trigger="load">x</div>',
    '<div id="composer" hx-swap-oob="true">replaced</div>',
    '<form action="/logout/" method="post"><button>x</button></form>',
    "<style>body{display:none}</style>",
    "<!-- <script>alert(1)</script> -->",
    "<details open ontoggle=alert(1)>",
    "raw <b onclick=alert(1)>bold</b> and <i>html</i>",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_it_renders_hostile_model_output_inert(text: str) -> None:
    assert dangers(markdown_to_html(text), markdown=True) == []


def test_it_shows_raw_html_as_text_rather_than_dropping_it() -> None:
    html = markdown_to_html("Use <script>alert(1)</script> carefully")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert [tag for tag, _ in elements(html)] == ["p"]


def test_it_keeps_safe_links_and_opens_them_apart_from_the_page() -> None:
    html = markdown_to_html("[docs](https://example.com/a?b=1) and [mail](mailto:a@example.com)")
    links = [dict(attrs) for tag, attrs in elements(html) if tag == "a"]
    assert [link["href"] for link in links] == ["https://example.com/a?b=1", "mailto:a@example.com"]
    assert all(link["rel"] == "noopener noreferrer nofollow" for link in links)
    assert all(link["target"] == "_blank" for link in links)


def test_it_keeps_ordinary_markdown() -> None:
    html = markdown_to_html("# Title\n\n*em* **strong** `code`\n\n| a | b |\n|---|---|\n| 1 | 2 |")
    tags = {tag for tag, _ in elements(html)}
    assert {"h1", "em", "strong", "code", "table", "td"} <= tags


_pieces = st.sampled_from(
    [
        *HOSTILE,
        "<",
        ">",
        '"',
        "'",
        "=",
        "javascript:",
        "on",
        "error",
        "load",
        "(",
        ")",
        "[",
        "]",
        "!",
        "`",
        "\n",
        " ",
        "&#",
        "x;",
        "a",
        "href",
        "src",
        "<a ",
        "<img ",
        "<svg/",
        "alert(1)",
    ]
)


@given(text=st.lists(_pieces, max_size=25).map("".join))
def test_it_renders_any_mix_of_hostile_fragments_inert(text: str) -> None:
    assert dangers(markdown_to_html(text), markdown=True) == []


@pytest.mark.parametrize("text", HOSTILE)
def test_it_escapes_streamed_thinking(text: str) -> None:
    for html in (outbound.delta(3, "thinking", text), outbound.replace_stream(3, "thinking", text)):
        assert [tag for tag, _ in elements(html)] in (["span"], ["div"])
        assert dangers(html) == []


@pytest.mark.parametrize("text", HOSTILE)
def test_it_sanitizes_streamed_markdown_cut_anywhere(text: str) -> None:
    for cut in range(len(text) + 1):
        step = markdown_stream.step(text[:cut], markdown_stream.Progress())
        for html in (
            outbound.replace_stream(3, "text", text[:cut]),
            outbound.markdown_frame(3, list(step.new_blocks), step.open_html),
        ):
            assert dangers(html) == []
            assert all(tag == "div" or tag in ALLOWED_TAGS for tag, _ in elements(html))


def test_it_keeps_a_tag_split_across_deltas_inert() -> None:
    text = "<img src=x onerror=alert(1)><script>alert(2)</script>"
    for cut in range(1, len(text)):
        for piece in (text[:cut], text[cut:]):
            html = outbound.delta(3, "thinking", piece)
            assert [tag for tag, _ in elements(html)] == ["span"]


def test_it_formats_tool_input_and_results_as_text() -> None:
    assert pretty_json('{"b": 1, "a": "<x>"}') == '{\n  "a": "<x>",\n  "b": 1\n}'
    assert pretty_json("not json <x>") == "not json <x>"
    assert result_text([{"type": "text", "text": "<b>"}, {"type": "text", "text": "2"}]) == "<b>\n2"
    assert result_text(None) == ""


def test_a_finished_reply_is_rendered_once_for_every_page_that_shows_it() -> None:
    text = "Some **bold** text and [a link](https://example.com).\n\n- one\n- two\n"
    first = markdown_to_html(text)
    hits = markdown_to_html.cache_info().hits
    assert markdown_to_html(text) is first
    assert markdown_to_html.cache_info().hits == hits + 1
