"""No script in markup: templates and HTML-building modules hold no inline handlers or scripts.

The CSP allows only nonce'd scripts, so an inline handler would silently not work; this test
says so at once, and keeps templates from growing `javascript:` URLs or unescaped output.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARKUP = [
    *sorted((ROOT / "templates").rglob("*.html")),
    *sorted((ROOT / "chat").rglob("templates/**/*.html")),
    ROOT / "chat" / "sockets" / "outbound.py",
    ROOT / "chat" / "admin.py",
]
FORBIDDEN = {
    "inline event handler": re.compile(r"\son[a-z]+\s*=", re.I),
    "javascript: URL": re.compile(r"javascript:", re.I),
    "htmx inline handler": re.compile(r"\bhx-on\b", re.I),
    "htmx hx-vars (evaluated as script)": re.compile(r"\bhx-vars\b", re.I),
    "unescaped output": re.compile(r"\|\s*safe\b|{%\s*autoescape\s+off", re.I),
}
SCRIPT = re.compile(r"<script\b[^>]*>", re.I)


@pytest.mark.parametrize("path", MARKUP, ids=lambda p: str(p.relative_to(ROOT)))
def test_it_has_no_inline_script_in_markup(path: Path) -> None:
    text = path.read_text()
    for what, pattern in FORBIDDEN.items():
        assert not pattern.search(text), f"{what} in {path}"
    for tag in SCRIPT.findall(text):
        assert 'nonce="{{ csp_nonce }}"' in tag and " src=" in tag, f"inline script: {tag}"


def test_it_tells_htmx_never_to_evaluate_script() -> None:
    base = (ROOT / "templates" / "base.html").read_text()
    assert '"allowEval": false' in base
    assert '"allowScriptTags": false' in base
