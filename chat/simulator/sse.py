"""Server-sent events, framed as the Messages API frames them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def encode_event(name: str, data: Mapping[str, Any]) -> bytes:
    """`event: NAME\\ndata: JSON\\n\\n`, JSON compact and UTF-8 (never ASCII-escaped)."""
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"event: {name}\ndata: {payload}\n\n".encode()
