"""Signatures of simulated thinking blocks.

The real API signs every thinking block and refuses one whose text or signature was changed. The
simulator does the same with a keyed hash, so a client that edits or drops thinking blocks gets the
400 it would get in production.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

_KEY = b"tandem-simulator-thinking-v1"
_PREFIX = b"SimSig\x01"


def sign_thinking(thinking: str) -> str:
    digest = hmac.new(_KEY, thinking.encode(), hashlib.sha256).digest()
    # Real signatures are long opaque base64 strings; this one is 120 characters.
    return base64.b64encode(_PREFIX + digest + hashlib.sha512(digest).digest()[:43]).decode()


def is_valid_signature(thinking: str, signature: str) -> bool:
    return hmac.compare_digest(sign_thinking(thinking), signature)
