"""The same simulator over real loopback HTTP, served by daphne (the ANTHROPIC_BASE_URL path)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anthropic
import httpx2
import pytest

from .helpers import MODEL, request, user

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
    server = subprocess.Popen(
        [*command, "chat.simulator.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "daphne did not start"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
async def client(base_url: str) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with anthropic.AsyncAnthropic(api_key="k", base_url=base_url, max_retries=0) as sdk:
        yield sdk


async def test_it_streams_over_loopback(client: anthropic.AsyncAnthropic) -> None:
    async with client.messages.stream(**request("Reply with exactly: over the wire")) as stream:
        message = await stream.get_final_message()
    assert message.content[0].text == "over the wire"  # type: ignore[union-attr]
    assert stream.request_id is not None
    assert stream.request_id.startswith("req_")


async def test_it_refuses_invalid_requests_over_loopback(client: anthropic.AsyncAnthropic) -> None:
    empty = [user([{"type": "text", "text": ""}])]
    with pytest.raises(anthropic.BadRequestError, match="text content blocks must be non-empty"):
        await client.messages.create(model=MODEL, max_tokens=100, messages=empty)


async def test_it_drops_the_connection_over_loopback(client: anthropic.AsyncAnthropic) -> None:
    with pytest.raises(httpx2.RemoteProtocolError, match="incomplete chunked read"):
        async with client.messages.stream(**request("hi [[sim:fail=drop]]")) as stream:
            await stream.get_final_message()


async def test_it_serves_again_after_a_drop(client: anthropic.AsyncAnthropic) -> None:
    message = await client.messages.create(**request("still there?"))
    assert message.stop_reason == "end_turn"
