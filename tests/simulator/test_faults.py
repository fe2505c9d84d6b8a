"""Each fault gives the SDK-visible failure of section 1."""

from __future__ import annotations

import anthropic
import httpx2
import pytest

from chat.simulator import Fault, Simulator, make_client, push_fault
from chat.simulator.faults import parse_marker, pending_faults

from .helpers import MODEL, assistant, request, user


async def final(client: anthropic.AsyncAnthropic, text: str) -> anthropic.types.Message:
    async with client.messages.stream(**request(text)) as stream:
        return await stream.get_final_message()


async def test_it_retries_a_queued_429_then_succeeds(
    client: anthropic.AsyncAnthropic, sim: Simulator
) -> None:
    push_fault(Fault("429", retry_after=0.01))
    message = await final(client, "hello")
    assert message.stop_reason == "end_turn"
    assert sim.stats.snapshot()["by_status"] == {429: 1, 200: 1}


async def test_it_fires_a_marker_once_per_request_content(
    client: anthropic.AsyncAnthropic, sim: Simulator
) -> None:
    await final(client, "hello [[sim:fail=429,retry_after=0.01]]")
    await final(client, "hello [[sim:fail=429,retry_after=0.01]]")
    assert sim.stats.snapshot()["by_status"] == {429: 1, 200: 2}


async def test_it_gives_up_after_the_retries(sim: Simulator) -> None:
    push_fault(Fault("429", times=3, retry_after=0.01))
    async with make_client(sim, max_retries=2) as client:
        with pytest.raises(anthropic.RateLimitError) as failed:
            await final(client, "hello")
    assert failed.value.response.headers["retry-after"] == "0.01"
    assert failed.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    assert sim.stats.snapshot()["requests"] == 3


async def test_it_retries_an_overload_then_succeeds(
    client: anthropic.AsyncAnthropic, sim: Simulator
) -> None:
    await final(client, "hello [[sim:fail=529]]")
    assert sim.stats.snapshot()["by_status"] == {529: 1, 200: 1}


async def test_it_refuses_authentication_without_retry(
    client: anthropic.AsyncAnthropic, sim: Simulator
) -> None:
    with pytest.raises(anthropic.AuthenticationError, match="invalid x-api-key"):
        await final(client, "hello [[sim:fail=401]]")
    assert sim.stats.snapshot()["requests"] == 1


@pytest.mark.parametrize(
    ("kind", "error", "error_type"),
    [
        ("403", anthropic.PermissionDeniedError, "permission_error"),
        ("404", anthropic.NotFoundError, "not_found_error"),
        ("413", anthropic.ContentTooLargeError, "request_too_large"),
        ("500", anthropic.InternalServerError, "api_error"),
        ("529", anthropic.OverloadedError, "overloaded_error"),
    ],
)
async def test_it_answers_http_faults_with_real_bodies(
    sim: Simulator, kind: str, error: type[anthropic.APIStatusError], error_type: str
) -> None:
    push_fault(Fault(kind))  # type: ignore[arg-type]
    async with make_client(sim, max_retries=0) as client:
        with pytest.raises(error) as failed:
            await final(client, "hello")
    assert failed.value.status_code == int(kind)
    assert failed.value.body["error"]["type"] == error_type  # type: ignore[index]
    assert failed.value.request_id == failed.value.body["request_id"]  # type: ignore[index]


async def test_it_names_the_unknown_model(client: anthropic.AsyncAnthropic) -> None:
    push_fault(Fault("404"))
    with pytest.raises(anthropic.NotFoundError) as failed:
        await final(client, "hello")
    assert failed.value.body["error"]["message"] == f"model: {MODEL}"  # type: ignore[index]


async def test_it_fails_in_stream_with_status_200(client: anthropic.AsyncAnthropic) -> None:
    texts: list[str] = []
    with pytest.raises(anthropic.APIStatusError) as failed:
        async with client.messages.stream(**request("hello [[sim:fail=stream_error]]")) as stream:
            async for text in stream.text_stream:
                texts.append(text)
    assert failed.value.status_code == 200
    assert failed.value.body["error"] == {"type": "overloaded_error", "message": "Overloaded"}  # type: ignore[index]
    assert len(texts) == 3


async def test_it_drops_the_connection_mid_body(client: anthropic.AsyncAnthropic) -> None:
    with pytest.raises(httpx2.RemoteProtocolError):
        await final(client, "hello [[sim:fail=drop]]")


async def test_it_truncates_the_stream_cleanly(client: anthropic.AsyncAnthropic) -> None:
    message = await final(client, "hello [[sim:fail=truncate,after_deltas=2]]")
    assert message.stop_reason is None
    assert len(message.content) == 1


async def test_it_turns_a_stream_fault_into_529_without_streaming(sim: Simulator) -> None:
    push_fault(Fault("stream_error"))
    async with make_client(sim, max_retries=0) as client:
        with pytest.raises(anthropic.OverloadedError):
            await client.messages.create(**request("hello"))


async def test_it_ignores_markers_outside_the_last_user_turn(
    client: anthropic.AsyncAnthropic, sim: Simulator
) -> None:
    messages = [user("hello [[sim:fail=500]]"), assistant("Hi."), user("again")]
    await client.messages.create(model=MODEL, max_tokens=100, messages=messages)
    assert sim.stats.snapshot()["by_status"] == {200: 1}


async def test_it_consumes_queued_faults_in_order(sim: Simulator) -> None:
    push_fault(Fault("403"))
    push_fault(Fault("401"))
    assert [fault.kind for fault in pending_faults()] == ["403", "401"]
    async with make_client(sim, max_retries=0) as client:
        with pytest.raises(anthropic.PermissionDeniedError):
            await client.messages.create(**request("one"))
        with pytest.raises(anthropic.AuthenticationError):
            await client.messages.create(**request("two"))
        await client.messages.create(**request("three"))
    assert sim.stats.snapshot()["faults_injected"] == 2


async def test_it_spares_faults_for_invalid_requests(client: anthropic.AsyncAnthropic) -> None:
    push_fault(Fault("500"))
    with pytest.raises(anthropic.BadRequestError):
        await client.messages.create(model=MODEL, max_tokens=10, messages=[user(" ")])
    assert len(pending_faults()) == 1


def test_it_parses_marker_options() -> None:
    assert parse_marker("x [[sim:fail=429,times=2,retry_after=0.5]]") == Fault(
        "429", times=2, retry_after=0.5
    )
    assert parse_marker("[[sim:fail=teapot]]") is None
