"""Markdown while it streams, search and export, in a real browser.

The simulator streams "reply with exactly: TEXT" verbatim, token by token, so the reply here
is Markdown written for the test: bold early, then a list, a table, code and long paragraphs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import send, start_conversation

pytestmark = pytest.mark.browser

PARAGRAPH = (
    "Steeping is mostly a matter of temperature and time, and both are easy to get wrong when "
    "the kettle is already boiling and the cup is waiting. "
)
REPLY = (
    "Intro with **bold words** and `inline code`.\n\n"
    "- first item\n- second item\n\n"
    "| tea | minutes |\n|---|---:|\n| green | 2 |\n| black | 4 |\n\n"
    '```python\nprint("steep")\n```\n\n' + "\n\n".join(PARAGRAPH * 2 for _ in range(8))
)

# Records the reply's body as laid out right before the frame that finishes it, and right
# after: each element (the box-less open-block wrapper unwrapped) with its text and box.
RECORDER = """() => {
  window.__md = {before: null, after: null};
  function shape(body) {
    const top = body.getBoundingClientRect().top;
    const items = [];
    (function walk(el) {
      for (const child of el.children) {
        if (child.classList.contains('stream-open')) { walk(child); continue; }
        const r = child.getBoundingClientRect();
        items.push([child.tagName, child.textContent, r.top - top, r.height, r.width]);
        walk(child);
      }
    })(body);
    const article = body.closest('article').getBoundingClientRect().top;
    return {items: items, height: body.getBoundingClientRect().height, offset: top - article};
  }
  document.addEventListener('htmx:wsBeforeMessage', () => {
    const body = document.querySelector('.status-streaming .stream');
    if (body && !window.__md.after) window.__md.before = shape(body);
  });
  document.addEventListener('htmx:wsAfterMessage', () => {
    const done = document.querySelector('.kind-reply.status-complete .body.markdown');
    if (done && window.__md.before && !window.__md.after) window.__md.after = shape(done);
  });
}"""


def _same_layout(before: dict[str, Any], after: dict[str, Any]) -> None:
    assert [(tag, text) for tag, text, *_ in before["items"]] == [
        (tag, text) for tag, text, *_ in after["items"]
    ]
    for (tag, _, *box_before), (_, _, *box_after) in zip(
        before["items"], after["items"], strict=True
    ):
        assert all(abs(a - b) < 1 for a, b in zip(box_before, box_after, strict=True)), tag
    assert abs(before["height"] - after["height"]) < 1
    assert abs(before["offset"] - after["offset"]) < 1  # the text does not move in the reply


def test_markdown_streams_as_it_arrives_and_ends_without_a_jump(new_page: Any) -> None:
    page = new_page("alice")
    url = start_conversation(page)
    page.evaluate(RECORDER)
    send(page, f"reply with exactly: {REPLY}")
    bold = page.locator(".kind-reply.status-streaming .stream strong")
    bold.first.wait_for()  # bold, rendered, while the reply still streams
    assert bold.first.inner_text() == "bold words"
    assert page.locator(".kind-reply.status-streaming").count() == 1

    late = new_page("alice")  # a tab opened mid-stream: the page render, then live frames
    late.goto(url)
    late.locator("#connection[data-state='open']").wait_for()
    late.evaluate(RECORDER)

    for tab in (page, late):
        tab.locator(".kind-reply.status-complete").wait_for(timeout=60_000)
        tab.wait_for_function("() => window.__md.after !== null")
        record = tab.evaluate("() => window.__md")
        _same_layout(record["before"], record["after"])
    body = page.locator(".kind-reply.status-complete .body.markdown")
    assert body.locator("strong").first.inner_text() == "bold words"
    assert body.locator("table td").all_inner_texts() == ["green", "2", "black", "4"]
    assert body.locator("li").all_inner_texts() == ["first item", "second item"]
    assert late.locator(".kind-reply .body.markdown").inner_html() == body.inner_html()
    streamed = page.evaluate("() => window.__md.before.items.map(i => i[0]).join(' ')")
    assert streamed == late.evaluate("() => window.__md.before.items.map(i => i[0]).join(' ')")

    # The code block's Copy button (added by tandem.js, no inline handler) copies the code.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    copy = body.get_by_role("button", name="Copy code")
    copy.click()
    page.wait_for_function("() => document.querySelector('.copy-code').textContent === 'Copied'")
    assert page.evaluate("() => navigator.clipboard.readText()") == 'print("steep")\n'


def test_search_finds_the_users_own_words_and_export_downloads_them(
    new_page: Any, tmp_path: Path
) -> None:
    page = new_page("alice")
    url = start_conversation(page)
    send(page, "Tell me about zebrafish <b>please</b>")
    page.locator(".kind-reply.status-complete").wait_for(timeout=60_000)

    search = page.get_by_role("searchbox", name="Search conversations")
    search.fill("zebrafish")
    search.press("Enter")
    page.wait_for_url("**/search/?q=zebrafish")
    hits = page.locator(".hits li")
    assert hits.count() >= 1
    assert page.locator(".hits mark").first.inner_text().lower() == "zebrafish"
    assert "zebrafish <b>please</b>" in hits.first.inner_text()  # markup shows as text
    assert page.locator(".hits b").count() == 0
    hits.first.get_by_role("link").click()
    page.wait_for_url(url + "*")

    with page.expect_download() as markdown:
        page.get_by_role("link", name="Export", exact=True).click()
    path = tmp_path / markdown.value.suggested_filename
    markdown.value.save_as(path)
    assert path.suffix == ".md" and "## You\n\nTell me about zebrafish" in path.read_text()
    with page.expect_download() as as_json:
        page.get_by_role("link", name="Export as JSON").click()
    assert as_json.value.suggested_filename.endswith(".json")

    bob = new_page("bob")
    bob.get_by_role("searchbox", name="Search conversations").fill("zebrafish")
    bob.get_by_role("searchbox", name="Search conversations").press("Enter")
    bob.wait_for_url("**/search/?q=zebrafish")
    assert bob.locator(".hits li").count() == 0
    assert bob.goto(url.rstrip("/") + "/export/").status == 404  # type: ignore[union-attr]
