"""Build a Messages API request from a stored thread: the pure core of the pairing service.

The stored thread keeps every model reply exactly as it was received, tool_use blocks
included. A tool call joins the conversation only when its result exists: the pairing
service then appends a ``tool_calls`` assistant message (the tool_use blocks) and a
``tool_results`` user message (the matching tool_result blocks) at the end of the thread.
So, when a request is built:

* tool_use blocks are always taken out of the reply that produced them; they reappear at
  the point where they were flushed, or not at all while their result is outstanding;
* the text of that same reply stays where it was;
* consecutive turns of one role are merged (the API would merge them anyway), with
  tool_result blocks first in a user turn;
* a turn left empty gets a short placeholder, and the request always ends with a user turn;
* while tools are still running, the last user turn carries a note naming them. The note
  is never stored, so the cached prefix stays stable.

No I/O here: everything is a plain function of its arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Block = dict[str, Any]
Turn = dict[str, Any]

USER_PROMPT = "prompt"
REPLY = "reply"
TOOL_CALLS = "tool_calls"
TOOL_RESULTS = "tool_results"

PENDING_NOTE_MARK = "[Tandem note, not written by the user]"
CONTINUE_PLACEHOLDER = "(Continue.)"
START_PLACEHOLDER = "(The conversation continues.)"
MAX_CACHE_BREAKPOINTS = 4


@dataclass(frozen=True)
class StoredMessage:
    """What the builder needs of a ``chat.models.Message``."""

    seq: int
    role: str
    kind: str
    content: Sequence[Block]


@dataclass(frozen=True)
class PendingCall:
    """A tool call whose result has not been flushed into the thread yet."""

    tool_use_id: str
    name: str
    status: str = "running"


@dataclass(frozen=True)
class RequestOptions:
    model: str
    max_tokens: int
    system: str = ""
    tools: Sequence[Mapping[str, Any]] = ()
    # Definitions of every tool that may appear in the history, offered or not (rule 9 of
    # the request rules in chat/simulator/validator.py).
    known_tools: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    allow_tool_use: bool = True
    thinking_budget: int | None = None
    cache: bool = True
    cache_ttl: str = "5m"  # "1h": every breakpoint at the 1-hour lifetime


# --- blocks -------------------------------------------------------------------------------


def _text(text: str) -> Block:
    return {"type": "text", "text": text}


def _is_blank_text(block: Block) -> bool:
    return block.get("type") == "text" and not str(block.get("text", "")).strip()


def to_param(block: Mapping[str, Any]) -> Block | None:
    """Reduce a stored block to the fields the API accepts on input (None drops it)."""
    kind = block.get("type")
    if kind == "text":
        text = str(block.get("text", ""))
        if not text.strip():
            return None
        out: Block = {"type": "text", "text": text}
        if block.get("citations"):
            out["citations"] = block["citations"]
        return out
    if kind == "tool_use":
        return {
            "type": "tool_use",
            "id": block["id"],
            "name": block["name"],
            "input": block.get("input") or {},
        }
    if kind == "tool_result":
        out = {"type": "tool_result", "tool_use_id": block["tool_use_id"]}
        content = block.get("content")
        if content is not None and content != "" and content != []:
            out["content"] = content
        if block.get("is_error"):
            out["is_error"] = True
        return out
    if kind == "thinking":
        return {
            "type": "thinking",
            "thinking": block.get("thinking", ""),
            "signature": block.get("signature", ""),
        }
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.get("data", "")}
    if kind == "image":
        return dict(block)
    return None


def _placeholder_for_held_calls(names: Sequence[str]) -> str:
    joined = ", ".join(dict.fromkeys(names))
    return f"(Started {joined} in the background.)"


# --- turns --------------------------------------------------------------------------------


def _turn_for(message: StoredMessage) -> Turn | None:
    """One stored message as an API turn, or None when it has nothing to say."""
    if message.role not in ("user", "assistant"):
        return None
    blocks: list[Block] = []
    held: list[str] = []
    for raw in message.content:
        if message.kind == REPLY and raw.get("type") == "tool_use":
            held.append(str(raw.get("name", "tool")))
            continue
        param = to_param(raw)
        if param is not None:
            blocks.append(param)
    if not any(b["type"] != "thinking" and b["type"] != "redacted_thinking" for b in blocks):
        # A reply whose only visible part was tool calls keeps its place with a placeholder;
        # anything else left without text (an errored or empty reply) is skipped.
        if held:
            blocks = [b for b in blocks if b["type"] in ("thinking", "redacted_thinking")]
            blocks.append(_text(_placeholder_for_held_calls(held)))
        else:
            return None
    return {"role": message.role, "content": blocks}


def merge_turns(turns: Sequence[Turn]) -> list[Turn]:
    """Merge consecutive turns of one role; tool_result blocks lead a user turn."""
    merged: list[Turn] = []
    for turn in turns:
        if merged and merged[-1]["role"] == turn["role"]:
            merged[-1]["content"].extend(turn["content"])
        else:
            merged.append({"role": turn["role"], "content": list(turn["content"])})
    for turn in merged:
        if turn["role"] == "user":
            results = [b for b in turn["content"] if b["type"] == "tool_result"]
            others = [b for b in turn["content"] if b["type"] != "tool_result"]
            turn["content"] = results + others
    return merged


def pending_note(pending: Sequence[PendingCall]) -> str:
    calls = ", ".join(f"{p.name} ({p.tool_use_id}, {p.status.replace('_', ' ')})" for p in pending)
    return (
        f"{PENDING_NOTE_MARK} These tool calls are still running in the background: {calls}. "
        "Their results will arrive in a later message. Do not call them again and do not "
        "guess their results."
    )


def build_messages(
    thread: Sequence[StoredMessage], pending: Sequence[PendingCall] = ()
) -> list[Turn]:
    """The ``messages`` array for a request: valid by construction, ending with a user turn."""
    ordered = sorted(thread, key=lambda m: m.seq)
    turns = [t for t in (_turn_for(m) for m in ordered) if t is not None]
    messages = merge_turns(turns)
    if messages and messages[0]["role"] == "assistant":
        messages.insert(0, {"role": "user", "content": [_text(START_PLACEHOLDER)]})
    if not messages or messages[-1]["role"] == "assistant":
        messages.append({"role": "user", "content": [_text(CONTINUE_PLACEHOLDER)]})
    if pending:
        messages[-1]["content"].append(_text(pending_note(pending)))
    return messages


# --- the request --------------------------------------------------------------------------


def _tool_names_in(messages: Sequence[Turn]) -> list[str]:
    names: list[str] = []
    for turn in messages:
        for block in turn["content"]:
            if block["type"] == "tool_use" and block["name"] not in names:
                names.append(block["name"])
    return names


def _has_tool_blocks(messages: Sequence[Turn]) -> bool:
    return any(b["type"] in ("tool_use", "tool_result") for t in messages for b in t["content"])


def _thinking_allowed(messages: Sequence[Turn]) -> bool:
    """Rule 14 (chat/simulator/validator.py): with thinking on, the last assistant turn
    carrying a tool_use must start with thinking."""
    for turn in reversed(messages):
        if turn["role"] == "assistant" and any(b["type"] == "tool_use" for b in turn["content"]):
            return turn["content"][0]["type"] in ("thinking", "redacted_thinking")
    return True


def _tools_param(options: RequestOptions, messages: Sequence[Turn]) -> list[dict[str, Any]]:
    tools = [dict(t) for t in options.tools]
    offered = {t["name"] for t in tools}
    for name in _tool_names_in(messages):
        if name in offered:
            continue
        known = options.known_tools.get(name)
        tools.append(
            dict(known)
            if known
            else {
                "name": name,
                "description": "This tool is no longer available.",
                "input_schema": {"type": "object", "properties": {}},
            }
        )
        offered.add(name)
    return tools


def _last_cacheable(turn: Turn, *, skip_last: bool) -> Block | None:
    blocks: list[Block] = turn["content"][:-1] if skip_last else turn["content"]
    for block in reversed(blocks):
        if block["type"] in ("text", "tool_result", "tool_use", "image") and not _is_blank_text(
            block
        ):
            return block
    return None


def build_request(
    thread: Sequence[StoredMessage],
    options: RequestOptions,
    pending: Sequence[PendingCall] = (),
) -> dict[str, Any]:
    """The keyword arguments for ``client.messages.stream(**request)``."""
    messages = build_messages(thread, pending)
    request: dict[str, Any] = {
        "model": options.model,
        "max_tokens": options.max_tokens,
        "messages": messages,
    }
    if options.system.strip():
        request["system"] = [_text(options.system)]
    tools = _tools_param(options, messages) if (options.tools or _has_tool_blocks(messages)) else []
    if tools:
        request["tools"] = tools
        if not options.allow_tool_use or not options.tools:
            request["tool_choice"] = {"type": "none"}
    budget = options.thinking_budget
    if budget and 1024 <= budget < options.max_tokens and _thinking_allowed(messages):
        request["thinking"] = {"type": "enabled", "budget_tokens": budget}
    if options.cache:
        _add_cache_breakpoints(request, has_note=bool(pending), ttl=options.cache_ttl)
    return request


def build_keepalive_request(
    thread: Sequence[StoredMessage], options: RequestOptions, pending: Sequence[PendingCall]
) -> dict[str, Any] | None:
    """The request that keeps the cached prefix warm while tools run: the turn's own request
    with ``max_tokens: 0``, sent without streaming, never stored (see chat.billing.cache_plan).

    None when nothing pends, and with thinking on: its budget must stay below ``max_tokens``,
    and turning it off for the keep-alive would change the cached prefix."""
    if not pending:
        return None
    request = build_request(thread, options, pending)
    if "thinking" in request:
        return None
    request["max_tokens"] = 0
    return request


def _add_cache_breakpoints(request: dict[str, Any], *, has_note: bool, ttl: str = "5m") -> None:
    """Mark the stable prefix: tools, system, and the last stored block of the thread.

    A final user turn that holds only the placeholder (and the note) is not stored: the next
    request will have the tool results there instead, so the mark goes on the turn before.
    """
    control = {"type": "ephemeral", **({"ttl": "1h"} if ttl == "1h" else {})}
    marks = 0
    if request.get("tools"):
        request["tools"][-1] = {**request["tools"][-1], "cache_control": dict(control)}
        marks += 1
    if request.get("system"):
        request["system"][-1]["cache_control"] = dict(control)
        marks += 1
    messages = request["messages"]
    last = messages[-1]
    block = _last_cacheable(last, skip_last=has_note)
    if block is not None and block.get("text") == CONTINUE_PLACEHOLDER and len(messages) > 1:
        block = _last_cacheable(messages[-2], skip_last=False)
    if block is not None and marks < MAX_CACHE_BREAKPOINTS:
        block["cache_control"] = dict(control)
