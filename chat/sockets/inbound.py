"""Frames from browsers, parsed into typed actions: pure, no I/O, every refusal a clear text.

A message's text is judged by the service's own rule (``messages.clean_user_text``), here at
the door so that a refused message costs no rate-limit token.

A socket is bound to one conversation, so actions carry no conversation: a frame that names
another one is refused with the same words whether that conversation exists or not. Unknown
fields are ignored (htmx adds ``HEADERS``); missing or mistyped fields are refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from chat.services import messages
from chat.services.errors import UserInputError

MIN_FRAME_CHARS = 256 * 1024
MAX_ID = 2**63 - 1  # the largest value a database id or counter can hold

# Per user (all their sockets in a process share one budget, chat.sockets.socket_quota): a burst of
# this many frames, refilled at this many per second. Messages have their own per-user limit
# (chat.sockets.ratelimit); this one bounds the cheap-looking frames (sync, stop, cancel...) that
# still cost a database query each.
FRAME_BURST = 60
FRAMES_PER_SECOND = 10.0

NOT_TEXT = "Tandem understands text frames only (JSON objects)."
NOT_JSON = "That frame was not valid JSON."
NOT_OBJECT = "A frame must be a JSON object."
NO_TYPE = 'A frame needs a "type" naming its action.'
UNKNOWN_ACTION = "Unknown action."
OTHER_CONVERSATION = "This connection belongs to one conversation; open the other one to act on it."
BAD_CHARACTERS = "That message contains characters that cannot be stored (NUL or lone surrogates)."
TOO_MANY_FRAMES = "Too many frames at once; slow down."
BAD_REF = '"ref" must be a short token (letters, digits, "-" or "_").'
_REF = re.compile(r"[A-Za-z0-9_-]{1,32}")


@dataclass(frozen=True)
class FrameError:
    text: str


@dataclass(frozen=True)
class Sync:
    """The tab's cursor: it has every message up to ``seq`` and every change up to ``rev``."""

    type: ClassVar[str] = "sync"
    seq: int
    rev: int


@dataclass(frozen=True)
class Send:
    type: ClassVar[str] = "send"
    text: str
    ref: str = ""  # the page's name for this send, echoed when the message is stored


@dataclass(frozen=True)
class Stop:
    type: ClassVar[str] = "stop"
    message: int


@dataclass(frozen=True)
class Retry:
    type: ClassVar[str] = "retry"
    message: int


@dataclass(frozen=True)
class Cancel:
    type: ClassVar[str] = "cancel"
    pair: int


@dataclass(frozen=True)
class Approve:
    type: ClassVar[str] = "approve"
    pair: int


@dataclass(frozen=True)
class Deny:
    type: ClassVar[str] = "deny"
    pair: int
    note: str = ""


Action = Sync | Send | Stop | Retry | Cancel | Approve | Deny


def max_frame_chars(max_message_chars: int) -> int:
    """Room for the longest message even if every character arrives as a 12-char escape."""
    return max(MIN_FRAME_CHARS, 12 * max_message_chars + 4096)


def server_frame_bytes(max_message_chars: int) -> int:
    """What the WebSocket server itself accepts (it drops bigger frames with no answer): well
    above the largest frame ``decode`` takes, so frames in between get a clear refusal."""
    return max(4 * 1024 * 1024, 4 * max_frame_chars(max_message_chars))


def too_long(max_chars: int, length: int | None = None) -> str:
    got = f"{length:,} characters; " if length is not None else ""
    return f"That message is too long ({got}limit {max_chars:,} characters)."


def decode(text_data: str | None, bytes_data: bytes | None, *, max_chars: int) -> object:
    """The JSON value of a text frame, or a FrameError."""
    if text_data is None or bytes_data is not None:
        return FrameError(NOT_TEXT)
    limit = max_frame_chars(max_chars)
    if len(text_data) > limit:
        return FrameError(too_long(max_chars))
    try:
        return json.loads(text_data)
    except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        return FrameError(NOT_JSON)


def parse(content: object, *, conversation_id: int, max_chars: int) -> Action | FrameError:
    """A decoded frame as an action for this socket's conversation, or why it is refused."""
    if isinstance(content, FrameError):
        return content
    if not isinstance(content, dict):
        return FrameError(NOT_OBJECT)
    if "type" not in content:
        return FrameError(NO_TYPE)
    kind = content["type"]
    if not isinstance(kind, str) or kind not in _PARSERS:
        return FrameError(UNKNOWN_ACTION)
    if "conversation" in content and not _same_id(content["conversation"], conversation_id):
        return FrameError(OTHER_CONVERSATION)
    try:
        return _PARSERS[kind](content, max_chars)
    except _Refused as refused:
        return FrameError(str(refused))


class _Refused(Exception):
    pass


def _required(content: dict[str, object], kind: str, name: str) -> object:
    if name not in content:
        raise _Refused(f'A "{kind}" frame needs a "{name}" field.')
    return content[name]


def _whole(content: dict[str, object], kind: str, name: str, *, minimum: int) -> int:
    value = _required(content, kind, name)
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_ID:
        what = "a positive whole number" if minimum > 0 else "a whole number, 0 or more"
        raise _Refused(f'"{name}" must be {what}.')
    return value


def _same_id(value: object, conversation_id: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value == conversation_id


def _text(value: object, *, name: str, max_chars: int) -> str:
    """What a person wrote, if it can be kept: text, not too long, storable."""
    if not isinstance(value, str):
        raise _Refused(f'"{name}" must be a string.')
    if len(value) > max_chars:
        if name == "text":
            raise _Refused(too_long(max_chars, len(value)))
        raise _Refused(f"That {name} is too long ({len(value):,} characters; limit {max_chars:,}).")
    if not _storable(value):
        raise _Refused(BAD_CHARACTERS)
    return value


def _storable(text: str) -> bool:
    """PostgreSQL refuses NUL in text and JSON; lone surrogates cannot be encoded at all."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _sync(content: dict[str, object], max_chars: int) -> Sync:
    return Sync(
        seq=_whole(content, "sync", "seq", minimum=0),
        rev=_whole(content, "sync", "rev", minimum=0),
    )


def _send(content: dict[str, object], max_chars: int) -> Send:
    text = _text(_required(content, "send", "text"), name="text", max_chars=max_chars)
    try:
        messages.clean_user_text(text, limit=max_chars)  # the one rule book for a message
    except UserInputError as exc:
        raise _Refused(str(exc)) from None
    ref = content.get("ref", "")
    if not isinstance(ref, str) or (ref and not _REF.fullmatch(ref)):
        raise _Refused(BAD_REF)
    return Send(text=text, ref=ref)


def _stop(content: dict[str, object], max_chars: int) -> Stop:
    return Stop(message=_whole(content, "stop", "message", minimum=1))


def _retry(content: dict[str, object], max_chars: int) -> Retry:
    return Retry(message=_whole(content, "retry", "message", minimum=1))


def _cancel(content: dict[str, object], max_chars: int) -> Cancel:
    return Cancel(pair=_whole(content, "cancel", "pair", minimum=1))


def _approve(content: dict[str, object], max_chars: int) -> Approve:
    return Approve(pair=_whole(content, "approve", "pair", minimum=1))


def _deny(content: dict[str, object], max_chars: int) -> Deny:
    note = _text(content.get("note", ""), name="note", max_chars=max_chars)
    return Deny(pair=_whole(content, "deny", "pair", minimum=1), note=note)


_PARSERS: dict[str, Callable[[dict[str, object], int], Action]] = {
    "sync": _sync,
    "send": _send,
    "stop": _stop,
    "retry": _retry,
    "cancel": _cancel,
    "approve": _approve,
    "deny": _deny,
}


@dataclass
class FrameBudget:
    """A token bucket: ``burst`` frames at once, refilled at ``per_second``."""

    burst: int = FRAME_BURST
    per_second: float = FRAMES_PER_SECOND
    tokens: float = field(init=False)
    last: float | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.tokens = float(self.burst)

    def take(self, now: float) -> bool:
        if self.last is not None:
            self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.per_second)
        self.last = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True
