"""The inertness checker used by the XSS tests catches what it must (a test of the test)."""

from __future__ import annotations

import pytest

from tests.security.inert import dangers


@pytest.mark.parametrize(
    "html",
    [
        "<script>alert(1)</script>",
        '<img src="x" onerror="alert(1)">',
        '<a href="javascript:alert(1)">x</a>',
        '<a href=" JAVA\tSCRIPT:alert(1)">x</a>',
        '<a href="data:text/html,x">x</a>',
        '<div hx-on:click="alert(1)">x</div>',
        '<iframe src="https://example.com"></iframe>',
    ],
)
def test_it_flags_active_html(html: str) -> None:
    assert dangers(html) != []


@pytest.mark.parametrize(
    "html", ['<div id="x" class="y">t</div>', '<span hx-swap-oob="true">x</span>']
)
def test_it_flags_app_markup_only_outside_markdown(html: str) -> None:
    assert dangers(html) == []
    assert dangers(html, markdown=True) != []


def test_it_passes_plain_markdown_output() -> None:
    html = '<p><a href="https://e.com" rel="noopener" target="_blank">x</a> &lt;b&gt;</p>'
    assert dangers(html, markdown=True) == []
