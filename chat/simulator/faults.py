"""Failures on demand, for tests and demos.

Two triggers, one `Fault` type:

* a process-wide FIFO: `push_fault(Fault("429"))` makes the next request fail; a fault with
  `times=N` fails the next N requests, then leaves the queue;
* a marker in the text of the request's last user turn, e.g. `[[sim:fail=529]]` or
  `[[sim:fail=429,times=3,retry_after=0.1]]`. A marker fault fires on the first `times` attempts
  of one request content (tracked by a hash of the body), so an SDK retry of the very same request
  succeeds with the default `times=1`. Markers anywhere else (earlier turns, tool results) are
  ignored, so a conversation goes on normally after the failed turn.

Kinds: HTTP errors `401 403 404 413 429 500 529` (section 3 bodies, `retry-after` on 429);
`stream_error` (an in-stream `event: error` overloaded_error after `after_deltas` deltas), `drop`
(the connection breaks mid-body) and `truncate` (the body ends cleanly, mid-message).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any, Literal, cast

from .turns import merge_turns

FaultKind = Literal[
    "401", "403", "404", "413", "429", "500", "529", "stream_error", "drop", "truncate"
]  # fmt: skip
HTTP_ERRORS: dict[str, tuple[int, str, str]] = {
    "401": (401, "authentication_error", "invalid x-api-key"),
    "403": (
        403,
        "permission_error",
        "Your API key does not have permission to use the specified resource.",
    ),
    "404": (404, "not_found_error", "model: {model}"),
    "413": (413, "request_too_large", "Request exceeds the maximum allowed number of bytes."),
    "429": (
        429,
        "rate_limit_error",
        "This request would exceed the rate limit for your organization. "
        "For details, refer to: https://docs.claude.com/en/api/rate-limits.",
    ),
    "500": (500, "api_error", "Internal server error"),
    "529": (529, "overloaded_error", "Overloaded"),
}
STREAM_KINDS = frozenset({"stream_error", "drop", "truncate"})
MARKER = re.compile(r"\[\[sim:fail=([a-z0-9_]+)((?:,[a-z_]+=[0-9.]+)*)\]\]")
_MEMORY = 4096  # request hashes remembered for marker faults


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    times: int = 1
    retry_after: float = 1.0  # seconds, sent as `retry-after` on 429
    after_deltas: int = 3  # stream faults: content deltas sent before the failure

    def __post_init__(self) -> None:
        if self.kind not in HTTP_ERRORS and self.kind not in STREAM_KINDS:
            raise ValueError(f"unknown fault kind: {self.kind!r}")
        if self.times < 1 or self.after_deltas < 0 or self.retry_after < 0:
            raise ValueError("times must be >= 1, after_deltas and retry_after >= 0")

    @property
    def is_http(self) -> bool:
        return self.kind in HTTP_ERRORS

    def http_error(self, model: str) -> tuple[int, str, str]:
        """Status, error type and message of an HTTP fault."""
        status, error_type, message = HTTP_ERRORS[self.kind]
        return status, error_type, message.format(model=model)

    def headers(self) -> dict[str, str]:
        if self.kind != "429":
            return {}
        seconds = self.retry_after
        return {"retry-after": str(int(seconds)) if seconds == int(seconds) else str(seconds)}


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.queue: deque[list[Any]] = deque()  # [fault, remaining]
        self.fired: OrderedDict[str, int] = OrderedDict()


_state = _State()


def push_fault(fault: Fault) -> None:
    """Make the next `fault.times` requests fail with `fault`, after those already queued."""
    with _state.lock:
        _state.queue.append([fault, fault.times])


def clear_faults() -> None:
    """Empty the queue and forget which marker faults already fired."""
    with _state.lock:
        _state.queue.clear()
        _state.fired.clear()


def pending_faults() -> list[Fault]:
    with _state.lock:
        return [cast(Fault, entry[0]) for entry in _state.queue]


def take_queued_fault() -> Fault | None:
    with _state.lock:
        if not _state.queue:
            return None
        entry = _state.queue[0]
        entry[1] -= 1
        if entry[1] <= 0:
            _state.queue.popleft()
        return cast(Fault, entry[0])


def parse_marker(text: str) -> Fault | None:
    """The fault of the first well-formed marker in `text`, if any."""
    for match in MARKER.finditer(text):
        options: dict[str, Any] = {}
        for pair in filter(None, match.group(2).split(",")):
            key, _, value = pair.partition("=")
            if key in ("times", "after_deltas"):
                options[key] = int(float(value))
            elif key == "retry_after":
                options[key] = float(value)
        try:
            return Fault(cast(FaultKind, match.group(1)), **options)
        except (TypeError, ValueError):
            continue
    return None


def strip_markers(text: str) -> str:
    return MARKER.sub("", text)


def last_user_text(body: dict[str, Any]) -> str:
    """The text blocks of the request's last turn, when it is a user turn."""
    turns = merge_turns(body.get("messages") or [])
    if not turns or turns[-1].role != "user":
        return ""
    blocks = turns[-1].blocks
    return "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")


def take_marker_fault(body: dict[str, Any]) -> Fault | None:
    """The marker fault of this request, if it has not yet fired `times` times for this body."""
    fault = parse_marker(last_user_text(body))
    if fault is None:
        return None
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    key = hashlib.sha256(canonical.encode()).hexdigest()
    with _state.lock:
        count = _state.fired.pop(key, 0)
        _state.fired[key] = count + 1
        while len(_state.fired) > _MEMORY:
            _state.fired.popitem(last=False)
    return fault if count < fault.times else None
