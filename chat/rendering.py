"""Model and user text to HTML: Markdown rendered, then sanitized by nh3 (Ammonia)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import nh3
from markdown_it import MarkdownIt

# Reference-style link definitions are off: one written at the end of a reply would change
# blocks that chat.markdown_stream has already sent while it streamed.
_md = (
    MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    .enable(["table", "strikethrough"])
    .disable("reference")
)

ALLOWED_TAGS = {
    "p",
    "br",
    "hr",
    "strong",
    "em",
    "del",
    "s",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "a",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "ol": {"start"},
    "th": {"align"},
    "td": {"align"},
    "code": {"class"},
}


def parser() -> MarkdownIt:
    """The one Markdown parser (CommonMark, tables, strikethrough, HTML input off)."""
    return _md


# Built once: ``nh3.clean`` with keyword arguments converts the allow-lists on every call,
# which costs more than cleaning a short block (a streaming reply sanitizes one per frame).
_cleaner = nh3.Cleaner(
    tags=ALLOWED_TAGS,
    attributes=ALLOWED_ATTRIBUTES,
    url_schemes={"http", "https", "mailto"},
    link_rel="noopener noreferrer nofollow",
    set_tag_attribute_values={"a": {"target": "_blank"}},
    strip_comments=True,
)


def sanitize(html: str) -> str:
    """Rendered Markdown made safe by nh3: no scripts, no handlers, only web and mail links."""
    return _cleaner.clean(html)


@lru_cache(maxsize=128)
def markdown_to_html(text: str) -> str:
    """Safe HTML for a finished message (the same as its blocks streamed, chat.markdown_stream).

    Memoised by text: a finished reply is rendered again for every doorbell that replaces it
    and every page that shows it, always the same."""
    return sanitize(_md.render(text))


def pretty_json(value: Any) -> str:
    """Tool input or result for display (escaped by the template, not here)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return str(value)
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def result_text(content: Any) -> str:
    """The text of a tool_result's content, whether a string or a list of blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content)
    return json.dumps(content, ensure_ascii=False)
