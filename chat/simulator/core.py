"""The wire format of the simulator's answers, independent of any HTTP library.

`stream_events` turns a reply into the exact event sequence of a streamed message (pure), and
`paced_stream` sends it at the configured token rate, failing on the way when a fault says so.
`SimResponse` is what transport.py hands to httpx2 and asgi.py to an ASGI server.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import string
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from jiter import from_json

from .brain import Block, Reply
from .cache import Usage
from .faults import Fault
from .sse import encode_event

_ALPHABET = string.ascii_letters + string.digits
DROP_MESSAGE = (
    "peer closed connection without sending complete message body (incomplete chunked read)"
)


class ConnectionDropped(Exception):
    """The simulated server breaks the connection in the middle of a body."""


@dataclass
class SimResponse:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | AsyncIterator[bytes] = b""


class Event(NamedTuple):
    name: str
    data: dict[str, Any]
    token: bool = False  # one output token: paced, and counted by stream faults


def new_id(prefix: str, length: int = 22) -> str:
    return prefix + "".join(secrets.choice(_ALPHABET) for _ in range(length))


def json_response(status: int, data: dict[str, Any], **headers: str) -> SimResponse:
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    return SimResponse(status, {"content-type": "application/json", **headers}, body)


def error_response(
    status: int, error_type: str, message: str, request_id: str, **headers: str
) -> SimResponse:
    error = {"type": error_type, "message": message}
    return json_response(
        status, {"type": "error", "error": error, "request_id": request_id}, **headers
    )


def usage_json(usage: Usage, output_tokens: int) -> dict[str, Any]:
    """The ``usage`` object. Its split of written tokens by lifetime (``cache_creation``) is
    sent only when something was written, so a reply without writes keeps the captured shape."""
    out: dict[str, Any] = {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }
    if usage.cache_creation_input_tokens:
        out["cache_creation"] = {
            "ephemeral_5m_input_tokens": usage.cache_creation_input_tokens
            - usage.cache_creation_1h_input_tokens,
            "ephemeral_1h_input_tokens": usage.cache_creation_1h_input_tokens,
        }
    return out


def message_json(
    reply: Reply, *, message_id: str, model: str, usage: Usage, output_tokens: int | None = None
) -> dict[str, Any]:
    """The Message object: complete for a non-streamed reply, empty for message_start."""
    streaming = output_tokens is not None
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [] if streaming else [_final_block(block) for block in reply.blocks],
        "stop_reason": None if streaming else reply.stop_reason,
        "stop_sequence": None if streaming else reply.stop_sequence,
        "usage": usage_json(usage, reply.output_tokens if output_tokens is None else output_tokens),
    }


def _final_block(block: Block) -> dict[str, Any]:
    if block.type == "thinking":
        return {"type": "thinking", "thinking": block.content, "signature": block.signature}
    if block.type == "text":
        return {"type": "text", "text": block.content}
    return {**_start_block(block), "input": _parsed_input(block)}


def _parsed_input(block: Block) -> dict[str, Any]:
    """A tool's input as the API would return it; a cut-off input is parsed as far as it goes."""
    if block.raw or not block.content:
        return {}
    try:
        value = from_json(block.content.encode(), partial_mode=True)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _start_block(block: Block) -> dict[str, Any]:
    if block.type == "thinking":
        return {"type": "thinking", "thinking": "", "signature": ""}
    if block.type == "text":
        return {"type": "text", "text": ""}
    caller = {"type": "direct"}
    return {
        "type": "tool_use",
        "id": block.tool_id,
        "name": block.name,
        "caller": caller,
        "input": {},
    }


def _delta(block: Block, piece: str) -> dict[str, Any]:
    if block.type == "thinking":
        return {"type": "thinking_delta", "thinking": piece}
    if block.type == "text":
        return {"type": "text_delta", "text": piece}
    return {"type": "input_json_delta", "partial_json": piece}


def stream_events(reply: Reply, *, message_id: str, model: str, usage: Usage) -> Iterator[Event]:
    """The events of a streamed reply, in the order of section 2, with one ping."""
    start = message_json(reply, message_id=message_id, model=model, usage=usage, output_tokens=1)
    yield Event("message_start", {"type": "message_start", "message": start})
    for index, block in enumerate(reply.blocks):
        start_block = {"type": "content_block_start", "index": index}
        yield Event("content_block_start", {**start_block, "content_block": _start_block(block)})
        if index == 0:
            yield Event("ping", {"type": "ping"})
        if block.type == "tool_use":
            yield _delta_event(index, {"type": "input_json_delta", "partial_json": ""})
        for piece in block.pieces:
            yield Event("content_block_delta", _delta_event(index, _delta(block, piece)).data, True)
        if block.type == "thinking":
            signature = {"type": "signature_delta", "signature": block.signature}
            yield _delta_event(index, signature)
        yield Event("content_block_stop", {"type": "content_block_stop", "index": index})
    delta = {"stop_reason": reply.stop_reason, "stop_sequence": reply.stop_sequence}
    usage_delta = {"output_tokens": reply.output_tokens}
    yield Event("message_delta", {"type": "message_delta", "delta": delta, "usage": usage_delta})
    yield Event("message_stop", {"type": "message_stop"})


def _delta_event(index: int, delta: dict[str, Any]) -> Event:
    return Event(
        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    )


async def paced_stream(
    events: Iterator[Event], *, tokens_per_second: float, fault: Fault | None, request_id: str
) -> AsyncIterator[bytes]:
    """Send events as they are generated, one token every 1/tokens_per_second seconds."""
    delay = 1.0 / tokens_per_second if tokens_per_second > 0 else 0.0
    deltas = 0
    for event in events:
        is_delta = event.name == "content_block_delta"
        due = fault is not None and (
            (is_delta and deltas >= fault.after_deltas) or event.name == "message_delta"
        )
        if fault is not None and due:
            if fault.kind == "stream_error":
                error = {"type": "overloaded_error", "message": "Overloaded"}
                yield encode_event(
                    "error", {"type": "error", "error": error, "request_id": request_id}
                )
            elif fault.kind == "drop":
                raise ConnectionDropped(DROP_MESSAGE)
            return
        if event.token and delay:
            await asyncio.sleep(delay)
        deltas += is_delta
        yield encode_event(event.name, event.data)


async def broken_body(body: bytes, *, drop: bool) -> AsyncIterator[bytes]:
    """The first half of a body, then a clean end or a broken connection."""
    yield body[: len(body) // 2]
    if drop:
        raise ConnectionDropped(DROP_MESSAGE)
