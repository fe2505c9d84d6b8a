"""The simulated Messages API, served in process through `httpx2.MockTransport(sim.handle)`.

Routes: POST /v1/messages (streamed or not) and POST /v1/messages/count_tokens. A request is
checked in the order of the real API: route, authentication (`authorization: Bearer KEY` or
`x-api-key`, any key), `anthropic-version` header, JSON body, request rules (validator.py). Only
then, for /v1/messages, a queued fault or a marker fault may take over (so an invalid request never
consumes a fault). One Simulator per process is the intended use: it holds the prompt cache and
the counters a load test reads.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx2

from .brain import decide
from .cache import PromptCache, count_input_tokens
from .core import (
    ConnectionDropped,
    SimResponse,
    broken_body,
    error_response,
    json_response,
    message_json,
    new_id,
    paced_stream,
    stream_events,
)
from .errors import InvalidRequest
from .faults import Fault, take_marker_fault, take_queued_fault
from .validator import validate_count_tokens, validate_request

MESSAGES, COUNT_TOKENS = "/v1/messages", "/v1/messages/count_tokens"
SSE_HEADERS = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}


class SimulatorStats:
    """Thread-safe counters: requests, invalid requests refused, faults injected, by status."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.rejected_invalid = 0
        self.faults_injected = 0
        self.by_status: dict[int, int] = {}

    def record(self, status: int, *, invalid: bool = False, fault: bool = False) -> None:
        with self._lock:
            self.requests += 1
            self.rejected_invalid += invalid
            self.faults_injected += fault
            self.by_status[status] = self.by_status.get(status, 0) + 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "requests": self.requests,
                "rejected_invalid": self.rejected_invalid,
                "faults_injected": self.faults_injected,
                "by_status": dict(self.by_status),
            }


class Simulator:
    def __init__(
        self, *, tokens_per_second: float = 40.0, seed: int = 0, cache: PromptCache | None = None
    ) -> None:
        self.tokens_per_second = tokens_per_second  # <= 0: no pacing at all
        self.seed = seed
        self.cache = cache or PromptCache()
        self.stats = SimulatorStats()

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        """The httpx2 MockTransport handler."""
        headers = {key.lower(): value for key, value in request.headers.items()}
        answer = await self.respond(
            request.method, request.url.path, headers, await request.aread()
        )
        body = answer.body if isinstance(answer.body, bytes) else _as_httpx2(answer.body)
        return httpx2.Response(answer.status, headers=answer.headers, content=body)

    async def respond(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> SimResponse:
        """Answer one request (headers with lower-case names); shared by transport and ASGI app."""
        request_id = new_id("req_011C", 20)
        invalid = fault = False
        try:
            answer, fault = await self._route(method, path, headers, body, request_id)
        except InvalidRequest as error:
            invalid = True
            answer = error_response(400, error.error_type, error.message, request_id)
        answer.headers["request-id"] = request_id
        self.stats.record(answer.status, invalid=invalid, fault=fault)
        return answer

    async def _route(
        self, method: str, path: str, headers: Mapping[str, str], raw: bytes, request_id: str
    ) -> tuple[SimResponse, bool]:
        if path not in (MESSAGES, COUNT_TOKENS):
            return error_response(404, "not_found_error", "Not Found", request_id), False
        if method != "POST":
            return error_response(
                405, "invalid_request_error", "Method Not Allowed", request_id
            ), False
        if not _api_key(headers):
            message = "x-api-key header is required"
            return error_response(401, "authentication_error", message, request_id), False
        if not headers.get("anthropic-version"):
            raise InvalidRequest("anthropic-version: header is required")
        body = _parse(raw)
        if path == COUNT_TOKENS:
            validate_count_tokens(body)
            return json_response(200, {"input_tokens": count_input_tokens(body)}), False
        validate_request(body)
        fault = take_queued_fault() or take_marker_fault(body)
        if fault is not None and fault.is_http:
            status, error_type, message = fault.http_error(str(body["model"]))
            return error_response(status, error_type, message, request_id, **fault.headers()), True
        return await self._messages(body, fault, request_id), fault is not None

    async def _messages(
        self, body: dict[str, Any], fault: Fault | None, request_id: str
    ) -> SimResponse:
        reply = decide(body, seed=self.seed)
        usage = self.cache.usage(body)
        message_id, model = new_id("msg_01"), str(body["model"])
        if body.get("stream"):
            events = stream_events(reply, message_id=message_id, model=model, usage=usage)
            stream = paced_stream(
                events, tokens_per_second=self.tokens_per_second, fault=fault, request_id=request_id
            )
            return SimResponse(200, dict(SSE_HEADERS), stream)
        if fault is not None and fault.kind == "stream_error":
            return error_response(529, "overloaded_error", "Overloaded", request_id)
        if self.tokens_per_second > 0:
            await asyncio.sleep(reply.output_tokens / self.tokens_per_second)
        answer = json_response(
            200, message_json(reply, message_id=message_id, model=model, usage=usage)
        )
        if fault is not None:  # truncate or drop: half the body, then an end or a broken connection
            assert isinstance(answer.body, bytes)
            answer.body = broken_body(answer.body, drop=fault.kind == "drop")
        return answer


def _api_key(headers: Mapping[str, str]) -> str:
    bearer = headers.get("authorization", "")
    if bearer.lower().startswith("bearer "):
        return bearer[7:].strip()
    return headers.get("x-api-key", "").strip()


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError:
        raise InvalidRequest(  # unconfirmed wording
            "There was an error parsing the body of your request. "
            "Please make sure it is valid JSON."
        ) from None
    if not isinstance(body, dict):
        raise InvalidRequest("Input should be a valid dictionary")
    return body


async def _as_httpx2(body: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The body, with a dropped connection surfacing as httpcore would report it."""
    try:
        async for chunk in body:
            yield chunk
    except ConnectionDropped as error:
        raise httpx2.RemoteProtocolError(str(error)) from None
