"""Bad input from the model: every bad call ends as an is_error tool_result with a useful message.

Tracebacks go to the log, never to the model or the page.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from channels.db import database_sync_to_async as db
from django.test import Client

from chat.modelapi import client as model_client
from chat.models import Message, ToolPair
from chat.runtime import engine
from tests.conftest import frames_until
from tools.errors import ToolError
from tools.registry import registry, spec_from_function

pytestmark = pytest.mark.django_db(transaction=True)


async def explode(text: str) -> str:
    """Fail with an unexpected error (a test tool)."""
    raise RuntimeError(f"secret internals: {text}")


async def refuse(text: str) -> str:
    """Fail with an error meant for the model (a test tool)."""
    raise ToolError(f"Cannot handle {text!r}; send a shorter text.")


async def hang(text: str) -> str:
    """Never finish (a test tool)."""
    await asyncio.sleep(3600)
    return text


def hang_in_a_thread(text: str) -> str:
    """Never finish, in a worker thread, but notice cancellation... eventually (a test tool)."""
    import time

    time.sleep(1.5)
    return text


async def odd_result(text: str) -> object:
    """Return something that is not JSON (a test tool)."""
    return {"when": object(), "text": text}


TEST_TOOLS = [
    spec_from_function(explode),
    spec_from_function(refuse),
    spec_from_function(hang, timeout=0.3),
    spec_from_function(hang_in_a_thread, timeout=0.3),
    spec_from_function(odd_result),
]


@pytest.fixture(autouse=True)
def _test_tools() -> Iterator[None]:
    with registry.temporarily(*TEST_TOOLS):
        yield


async def _call(
    connect: Any, owner: Any, conversation: Any, text: str
) -> tuple[ToolPair, list[str]]:
    """Ask for a call, wait for the reply that reads its result; the pair and every frame."""
    before = model_client.simulator().stats.snapshot()["rejected_invalid"]
    socket = await connect(owner, conversation.pk)
    await socket.send_json_to({"type": "send", "text": text})
    frames = await frames_until(socket, lambda f: "kind-tool_calls" in f)
    frames += await frames_until(socket, lambda f: "kind-reply status-complete" in f)
    await engine.idle()
    pair = await ToolPair.objects.aget(conversation=conversation)
    assert pair.is_error and pair.flushed_at is not None
    assert model_client.simulator().stats.snapshot()["rejected_invalid"] == before
    page = await db(_page)(owner, conversation.pk)
    for shown in [*frames, page, str(pair.result_content)]:
        assert "Traceback" not in shown
    results = await db(_flushed_result)(conversation.pk)
    assert results == {
        "type": "tool_result",
        "tool_use_id": pair.tool_use_id,
        "content": pair.result_content,
        "is_error": True,
    }
    return pair, frames


def _page(user: Any, conversation_id: int) -> str:
    browser = Client()
    browser.force_login(user)
    return browser.get(f"/conversations/{conversation_id}/").content.decode()


def _flushed_result(conversation_id: int) -> dict[str, Any]:
    message = Message.objects.get(conversation_id=conversation_id, kind="tool_results")
    [block] = message.content
    return dict(block)


async def test_it_answers_tool_input_that_is_not_json(
    connect: Any, owner: Any, conversation: Any
) -> None:
    pair, _ = await _call(connect, owner, conversation, "call calculate with raw {oops")
    assert pair.status == ToolPair.Status.FAILED
    assert "was not valid JSON" in pair.result_content and "{oops" in pair.result_content


async def test_it_answers_input_that_fails_the_schema(
    connect: Any, owner: Any, conversation: Any
) -> None:
    pair, _ = await _call(connect, owner, conversation, 'call calculate with {"expr": "1+1"}')
    assert "Invalid input for tool calculate" in pair.result_content
    assert "expression: Field required" in pair.result_content


async def test_it_answers_an_unknown_tool_with_the_names_it_could_use(
    connect: Any, owner: Any, conversation: Any
) -> None:
    pair, _ = await _call(connect, owner, conversation, "call launch_rockets with {}")
    assert "Unknown tool 'launch_rockets'" in pair.result_content
    assert "calculate" in pair.result_content


async def test_it_logs_the_traceback_of_a_tool_that_raises_and_tells_the_model_less(
    connect: Any, owner: Any, conversation: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="tools.execution"):
        pair, _ = await _call(connect, owner, conversation, 'call explode with {"text": "boom"}')
    assert pair.result_content == "Tool explode failed with an unexpected error (RuntimeError)."
    [record] = [r for r in caplog.records if r.name == "tools.execution"]
    assert record.exc_info is not None and "secret internals" in str(record.exc_info[1])


async def test_it_passes_on_the_message_of_a_tool_error(
    connect: Any, owner: Any, conversation: Any
) -> None:
    pair, _ = await _call(connect, owner, conversation, 'call refuse with {"text": "novel"}')
    assert pair.result_content == "Cannot handle 'novel'; send a shorter text."


@pytest.mark.parametrize("name", ["hang", "hang_in_a_thread"])
async def test_it_times_out_a_tool_that_hangs(
    connect: Any, owner: Any, conversation: Any, name: str
) -> None:
    pair, _ = await _call(connect, owner, conversation, f'call {name} with {{"text": "x"}}')
    assert pair.status == ToolPair.Status.TIMED_OUT
    assert "timed out after" in pair.result_content


async def test_it_answers_a_result_that_is_not_json(
    connect: Any, owner: Any, conversation: Any
) -> None:
    pair, _ = await _call(connect, owner, conversation, 'call odd_result with {"text": "x"}')
    assert pair.status == ToolPair.Status.FAILED
    assert "not JSON-serialisable (type dict)" in pair.result_content
