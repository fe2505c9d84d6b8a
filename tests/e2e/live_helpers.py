"""Small page probes shared by the live-chat browser tests."""

from __future__ import annotations

import time
from typing import Any

THREAD_JS = """() => Array.from(document.querySelectorAll('#thread > article')).map(
    a => [a.id, a.className, a.innerText.trim()])"""

STREAM_JS = """() => {
    const s = document.querySelector('.status-streaming .stream');
    return s ? s.textContent : null;
}"""

SETTLED_JS = """() => !document.querySelector(
    '.status-streaming, .tool-card.status-running, .tool-card.status-queued, .badge.queued')"""

FOCUS_JS = "(selector) => !!document.activeElement && document.activeElement.matches(selector)"

OUTLINE_JS = """() => {
    const s = getComputedStyle(document.activeElement);
    return s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0;
}"""


def thread(page: Any) -> list[tuple[str, str, str]]:
    """Every message in the thread as (id, classes, visible text), in page order."""
    return [tuple(item) for item in page.evaluate(THREAD_JS)]


def stream_text(page: Any) -> str | None:
    """The text of the reply streaming now, or None when nothing streams."""
    text = page.evaluate(STREAM_JS)
    return None if text is None else str(text)


def wait_settled(page: Any, timeout: float = 30_000) -> None:
    """Nothing streaming, no tool running or queued, no message waiting for its turn."""
    page.wait_for_function(SETTLED_JS, timeout=timeout)


def wait_streaming_text(page: Any, within: float = 15.0, *, at_least: int = 1) -> str:
    """The text of the streaming reply once it has ``at_least`` characters."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        text = stream_text(page)
        if text and len(text) >= at_least:
            return text
        page.wait_for_timeout(20)
    raise AssertionError("no reply started streaming")


def press_until_focused(page: Any, selector: str, key: str = "Tab", limit: int = 40) -> None:
    """Move focus with the keyboard alone until it lands on ``selector``."""
    for _ in range(limit):
        if page.evaluate(FOCUS_JS, selector):
            return
        page.keyboard.press(key)
    raise AssertionError(f"{key} never reached {selector}")


def focus_is_visible(page: Any) -> bool:
    return bool(page.evaluate(OUTLINE_JS))
