"""Property tests of the pairing core: random interleavings of user messages, replies with
0 to 3 tool calls, results in any order, failures, timeouts and interrupted replies.

For every interleaving, every request built passes the simulator's validator, every tool_use
ends with exactly one tool_result, and no user message is lost.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from chat.modelapi import history
from chat.simulator.signature import sign_thinking
from chat.simulator.validator import validate_request

TOOLS = [
    {"name": n, "description": f"{n} tool", "input_schema": {"type": "object", "properties": {}}}
    for n in ("tool_buffer_demo", "calculate", "current_time")
]
OUTCOMES = ("succeeded", "failed", "timed_out", "cancelled")


class Thread(RuleBasedStateMachine):
    """A pure model of what the services do to the stored thread."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[history.StoredMessage] = []
        self.answered = 0
        self.pending: dict[str, str] = {}  # tool_use_id -> name, not finished
        self.finished: dict[str, dict[str, Any]] = {}  # finished, not flushed
        self.flushed: set[str] = set()
        self.prompts: list[str] = []
        self.next_id = 0
        self.thinking = False
        self.last_request: dict[str, Any] | None = None

    def _append(self, role: str, kind: str, content: list[dict[str, Any]]) -> None:
        seq = len(self.messages) + 1
        self.messages.append(history.StoredMessage(seq, role, kind, content))

    def _due(self) -> bool:
        return any(m.role == "user" and m.seq > self.answered for m in self.messages)

    def _build(self) -> dict[str, Any]:
        pending = [history.PendingCall(i, n) for i, n in self.pending.items()]
        pending += [history.PendingCall(i, d["name"]) for i, d in self.finished.items()]
        options = history.RequestOptions(
            model="claude-sonnet-5-5",
            max_tokens=4096,
            system="Be brief.",
            tools=TOOLS,
            thinking_budget=2048 if self.thinking else None,
        )
        request = history.build_request(self.messages, options, pending)
        validate_request(request)
        self.last_request = request
        return request

    @rule(text=st.text(min_size=1, max_size=20).filter(lambda t: t.strip()))
    def user_sends(self, text: str) -> None:
        self.prompts.append(text)
        self._append("user", "prompt", [{"type": "text", "text": text}])

    @rule(on=st.booleans())
    def toggle_thinking(self, on: bool) -> None:
        self.thinking = on

    @precondition(lambda self: self._due())
    @rule(
        text=st.sampled_from(["", "  ", "Sure.", "Working on it.\n"]),
        calls=st.lists(st.sampled_from([t["name"] for t in TOOLS]), max_size=3),
        ending=st.sampled_from(["complete", "interrupted", "error"]),
        with_thinking=st.booleans(),
    )
    def model_turn(self, text: str, calls: list[str], ending: str, with_thinking: bool) -> None:
        self.flush()  # the runner flushes what is ready before it builds a request
        self._build()
        self.answered = len(self.messages)
        content: list[dict[str, Any]] = []
        if with_thinking and self.thinking and ending != "error":
            thought = "Let me think."
            content.append(
                {"type": "thinking", "thinking": thought, "signature": sign_thinking(thought)}
            )
        if ending != "error" and text:
            content.append({"type": "text", "text": text})
        if ending == "complete":
            for name in calls:
                self.next_id += 1
                tool_id = f"toolu_{self.next_id:04d}"
                content.append({"type": "tool_use", "id": tool_id, "name": name, "input": {}})
                self.pending[tool_id] = name
        self._append("assistant", "reply", content)

    @precondition(lambda self: self.pending)
    @rule(pick=st.integers(min_value=0), outcome=st.sampled_from(OUTCOMES))
    def tool_finishes(self, pick: int, outcome: str) -> None:
        tool_id = sorted(self.pending)[pick % len(self.pending)]
        name = self.pending.pop(tool_id)
        self.finished[tool_id] = {"name": name, "outcome": outcome}

    @rule()
    def flush(self) -> None:
        if not self.finished:
            return
        ids = sorted(self.finished)
        calls = [
            {"type": "tool_use", "id": i, "name": self.finished[i]["name"], "input": {}}
            for i in ids
        ]
        results = []
        for i in ids:
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": i,
                "content": f"{self.finished[i]['outcome']} result",
            }
            if self.finished[i]["outcome"] != "succeeded":
                block["is_error"] = True
            results.append(block)
        self._append("assistant", "tool_calls", calls)
        self._append("user", "tool_results", results)
        self.flushed.update(ids)
        self.finished.clear()

    @invariant()
    def every_request_is_valid(self) -> None:
        if self.messages:
            self._build()

    def teardown(self) -> None:
        # Finish and flush everything: each call ends with exactly one result, nothing lost.
        for tool_id in list(self.pending):
            self.finished[tool_id] = {"name": self.pending.pop(tool_id), "outcome": "timed_out"}
        self.flush()
        if not self.messages:
            return
        request = self._build()
        uses: list[str] = []
        results: list[str] = []
        texts: list[str] = []
        for turn in request["messages"]:
            for block in turn["content"]:
                if block["type"] == "tool_use":
                    uses.append(block["id"])
                elif block["type"] == "tool_result":
                    results.append(block["tool_use_id"])
                elif block["type"] == "text" and turn["role"] == "user":
                    texts.append(block["text"])
        assert sorted(uses) == sorted(self.flushed)
        assert sorted(results) == sorted(self.flushed)
        assert len(set(uses)) == len(uses)
        for prompt in self.prompts:
            assert prompt in texts


Thread.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestThreadInterleavings = Thread.TestCase
