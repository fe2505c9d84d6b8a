"""The reason Tandem exists: the conversation goes on while a tool runs."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from chat.models import Message, ToolPair
from chat.runtime import engine
from tests.conftest import frames_until

pytestmark = pytest.mark.django_db(transaction=True)


async def test_it_answers_while_the_demo_tool_runs_then_continues(
    connect: Any, owner: Any, conversation: Any
) -> None:
    socket = await connect(owner, conversation.pk)
    await socket.send_json_to({"type": "send", "text": "run the demo tool for 2 seconds"})
    await frames_until(socket, lambda f: "status-running" in f)
    await socket.send_json_to({"type": "send", "text": "meanwhile, what is a haiku?"})
    frames = await frames_until(
        socket, lambda f: "kind-reply status-complete" in f and "haiku" in f
    )
    pair = await ToolPair.objects.aget(conversation=conversation)
    assert pair.status == ToolPair.Status.RUNNING  # the second answer came while the tool ran
    assert frames
    await frames_until(socket, lambda f: "status-succeeded" in f, within=10)
    finished = time.monotonic()
    frames = await frames_until(
        socket, lambda f: "kind-reply status-complete" in f and "finished" in f
    )
    assert time.monotonic() - finished < 1.0
    await engine.idle()
    kinds = [
        m.kind async for m in Message.objects.filter(conversation=conversation).order_by("seq")
    ]
    assert kinds == ["prompt", "reply", "prompt", "reply", "tool_calls", "tool_results", "reply"]
    pair = await ToolPair.objects.aget(conversation=conversation)
    assert pair.flushed_at is not None and not pair.is_error


async def test_it_turns_a_bad_tool_input_into_an_error_result(
    connect: Any, owner: Any, conversation: Any
) -> None:
    socket = await connect(owner, conversation.pk)
    await socket.send_json_to({"type": "send", "text": 'call calculate with {"expression": 5}'})
    await frames_until(socket, lambda f: "kind-reply status-complete" in f and "failed" in f)
    await engine.idle()
    pair = await ToolPair.objects.aget(conversation=conversation)
    assert pair.status == ToolPair.Status.FAILED and pair.is_error
    assert "expression" in str(pair.result_content)


async def test_it_cancels_a_running_tool_and_tells_the_model(
    connect: Any, owner: Any, conversation: Any
) -> None:
    socket = await connect(owner, conversation.pk)
    await socket.send_json_to({"type": "send", "text": "run the demo tool for 30 seconds"})
    await frames_until(socket, lambda f: "status-running" in f)
    pair = await ToolPair.objects.aget(conversation=conversation)
    await socket.send_json_to({"type": "cancel", "pair": pair.pk})
    await frames_until(socket, lambda f: "kind-reply status-complete" in f and "cancelled" in f)
    await engine.idle()
    pair = await ToolPair.objects.aget(conversation=conversation)
    assert pair.status == ToolPair.Status.CANCELLED
    assert "cancelled by the user" in str(pair.result_content)
    await asyncio.sleep(0)
