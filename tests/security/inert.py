"""Is a piece of HTML inert? An HTML parser's view, not a regex: elements, attributes, URLs."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from chat import rendering

URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "data", "poster", "srcdoc"}
ACTIVE_ELEMENTS = {"script", "iframe", "frame", "object", "embed", "base", "svg", "math", "style"}
MARKDOWN_ATTRIBUTES = {"href", "title", "start", "align", "class", "target", "rel"}
_INVISIBLE = re.compile(r"[\x00-\x20]+")


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, list[tuple[str, str]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, [(name, value or "") for name, value in attrs]))


def elements(html: str) -> list[tuple[str, list[tuple[str, str]]]]:
    parser = _Elements()
    parser.feed(html)
    parser.close()
    return parser.found


def _scheme(url: str) -> str:
    """What a browser would take as the URL's scheme (it drops tabs, newlines, leading spaces)."""
    cleaned = _INVISIBLE.sub("", url).lower()
    return cleaned.split(":", 1)[0] + ":" if ":" in cleaned.split("/", 1)[0] else ""


def dangers(html: str, *, markdown: bool = False) -> list[str]:
    """What in ``html`` could run script or act on the page; empty if it is inert.

    ``markdown``: the output of chat.rendering, which may hold only its allow-list (no ids, no
    htmx attributes). Otherwise (pages, socket frames) the app's own markup is allowed: scripts
    loaded from /static/ and htmx attributes, as long as none carries the ``alert(`` marker of
    the hostile test text.
    """
    found: list[str] = []
    for tag, attrs in elements(html):
        values = dict(attrs)
        if markdown and tag not in rendering.ALLOWED_TAGS:
            found.append(f"<{tag}> outside the Markdown allow-list")
        if tag in ACTIVE_ELEMENTS and not (
            tag == "script" and values.get("src", "").startswith("/static/")
        ):
            found.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on"):
                found.append(f"<{tag} {name}=...>")
            if name in URL_ATTRIBUTES and _scheme(value) in {"javascript:", "vbscript:", "data:"}:
                found.append(f"<{tag} {name}={value!r}>")
            if markdown and name not in MARKDOWN_ATTRIBUTES:
                found.append(f"<{tag} {name}> outside the Markdown allow-list")
            if name.startswith(("hx-", "ws-", "data-")) and "alert(" in value:
                found.append(f"<{tag} {name}={value!r}> carries hostile text")
    return found
