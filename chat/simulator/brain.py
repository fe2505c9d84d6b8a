"""What the simulated model answers: a pure, deterministic function of the request.

`decide(body, seed=...)` returns the reply as blocks of stream pieces. A piece is the unit both of
streaming (one delta each) and of token accounting (one output token each), so `max_tokens` cuts
the reply exactly where the stream stops. In priority order:

1. thinking enabled -> a short signed thinking block first;
2. the last user turn opens with tool results -> a sentence on each result (then step 3 to 5 for
   any text the user added in the same turn; a "still running" note alone is not user text);
3. "reply with exactly: REST" -> REST verbatim (checked before tool calls, so that REST may say
   anything);
4. tool calls asked for in plain words (intents.py) -> a short preamble and tool_use blocks;
5. a note that tools are "still running" plus a status question -> says which tool still runs;
6. otherwise a few sentences of friendly Markdown, or about 400 words for "write a long answer".
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import secrets
import string
from dataclasses import dataclass, replace
from typing import Any, Literal

from .faults import strip_markers
from .intents import ToolCall, plan_tool_calls
from .prose import long_reply, quote_of, short_reply, wants_long_answer
from .signature import sign_thinking
from .turns import Block as RequestBlock
from .turns import Turn, merge_turns, tool_result_text
from .validator import thinking_enabled

_TOKEN = re.compile(r"\s*\S{1,5}|\s+")
_EXACTLY = re.compile(r"reply with exactly:[ \t]?", re.I)
_STATUS = re.compile(
    r"\b(?:done|finished|finish|ready|status|progress|complete|completed|over|back|"
    r"still running|how long)\b",
    re.I,
)
_ALPHABET = string.ascii_letters + string.digits
SNIPPET_CHARS = 200


@dataclass(frozen=True)
class Block:
    type: Literal["text", "thinking", "tool_use"]
    pieces: tuple[str, ...]
    tool_id: str = ""
    name: str = ""
    signature: str = ""
    raw: bool = False  # tool_use whose input text is deliberately not valid JSON

    @property
    def content(self) -> str:
        return "".join(self.pieces)


@dataclass(frozen=True)
class Reply:
    blocks: tuple[Block, ...]
    stop_reason: str
    stop_sequence: str | None = None

    @property
    def output_tokens(self) -> int:
        return sum(len(block.pieces) for block in self.blocks)


def tokenize(text: str) -> list[str]:
    """Token-sized pieces (some whitespace and up to five characters) that join back to `text`."""
    return _TOKEN.findall(text)


def request_seed(body: dict[str, Any], seed: int) -> int:
    """A seed from the request (streaming or not gets the same reply) and the settings seed."""
    content = {key: value for key, value in body.items() if key != "stream"}
    canonical = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    digest = hashlib.sha256(f"{seed}:{canonical}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def decide(body: dict[str, Any], *, seed: int = 0) -> Reply:
    """The reply to a validated request."""
    rng = random.Random(request_seed(body, seed))  # noqa: S311 - determinism wanted
    turns = merge_turns(body["messages"])
    last = turns[-1].blocks
    results = _leading_results(last)
    texts = [str(b["text"]) for b in last if b.get("type") == "text"]
    notes = [text for text in texts if "still running" in text.lower()]
    said = "\n".join(text for text in texts if text not in notes)
    user_text = strip_markers(said).strip()
    if results and not user_text:
        user_text = _buried_prompt(turns, body)

    calls: tuple[ToolCall, ...] = ()
    exact = _EXACTLY.search(said)
    if exact:
        text = said[exact.end() :]
    else:
        paragraphs = [_summarize(results, turns)] if results else []
        plan = plan_tool_calls(user_text, body.get("tools") or [], body.get("tool_choice") or {})
        calls = plan.calls
        if plan.calls:
            paragraphs.append(plan.preamble)
        elif notes and (not user_text or _STATUS.search(user_text)):
            paragraphs.append(_still_running(notes, turns, body))
        elif user_text or not results:
            reply = long_reply if wants_long_answer(user_text) else short_reply
            paragraphs.append(reply(user_text, rng))
        text = "\n\n".join(p for p in paragraphs if p)

    blocks: list[Block] = []
    if thinking_enabled(body):
        blocks.append(_thinking(user_text, calls, results, body))
    if text:
        blocks.append(Block("text", tuple(tokenize(text))))
    for call in calls:
        blocks.append(_tool_use(call, rng))
    return _limit(blocks, body)


def _buried_prompt(turns: list[Turn], body: dict[str, Any]) -> str:
    """User words stored just before a flushed tool pair (Tandem appends finished pairs at the
    end of the thread): the pair's assistant turn holds only tool_use blocks, and those words
    asked for other tools, so nothing has answered them yet."""
    if len(turns) < 3 or turns[-3].role != "user":
        return ""
    if any(b.get("type") != "tool_use" for b in turns[-2].blocks):
        return ""
    texts = [
        str(b["text"])
        for b in turns[-3].blocks
        if b.get("type") == "text" and "still running" not in str(b["text"]).lower()
    ]
    words = strip_markers("\n".join(texts)).strip()
    asked = plan_tool_calls(words, body.get("tools") or [], {}).calls
    called = sorted(str(b.get("name")) for b in turns[-2].blocks)
    if not asked or sorted(call.name for call in asked) == called:
        return ""  # most likely the usual round trip: these words led to these calls
    return words


def _leading_results(blocks: list[RequestBlock]) -> list[RequestBlock]:
    results: list[RequestBlock] = []
    for block in blocks:
        if block.get("type") != "tool_result":
            break
        results.append(block)
    return results


def _summarize(results: list[RequestBlock], turns: list[Turn]) -> str:
    previous = turns[-2].blocks if len(turns) > 1 else []
    names = {b.get("id"): b.get("name") for b in previous if b.get("type") == "tool_use"}
    sentences = []
    for result in results:
        name = names.get(result.get("tool_use_id"), "tool")
        snippet = " ".join(tool_result_text(result).split())
        if len(snippet) > SNIPPET_CHARS:
            snippet = snippet[:SNIPPET_CHARS].rstrip() + "…"
        snippet = snippet.rstrip(".") or "(no output)"
        if result.get("is_error"):
            sentences.append(f"The tool {name} failed: {snippet}.")
        else:
            sentences.append(f"The {name} call finished: {snippet}.")
    return "\n\n".join(sentences)


def _still_running(notes: list[str], turns: list[Turn], body: dict[str, Any]) -> str:
    note = " ".join(notes)
    offered = [str(tool.get("name")) for tool in body.get("tools") or []]
    names = [name for name in offered if name in note]
    if not names:
        used = [b["name"] for turn in turns for b in turn.blocks if b.get("type") == "tool_use"]
        names = used[-1:] or ["tool"]
    subject = f"The {' and '.join(names)} call{'s are' if len(names) > 1 else ' is'}"
    return f"{subject} still running. I'll tell you as soon as the result comes in."


def _thinking(
    user_text: str, calls: tuple[ToolCall, ...], results: list[RequestBlock], body: dict[str, Any]
) -> Block:
    if body["thinking"].get("display") == "omitted":
        return Block("thinking", (), signature=sign_thinking(""))
    quote = quote_of(user_text) or "nothing new"
    thought = f"The user wrote “{quote}”."
    if results:
        thought += " The tool results are in, so I should report them."
    if calls:
        thought += " A tool call fits this request."
    thought += " I'll keep the answer short and clear."
    return Block("thinking", tuple(tokenize(thought)), signature=sign_thinking(thought))


def _tool_use(call: ToolCall, rng: random.Random) -> Block:
    # Unique like the real API's ids (the content stays deterministic): two conversations with
    # identical requests must not get the same tool_use id.
    tool_id = "toolu_01" + "".join(secrets.choice(_ALPHABET) for _ in range(22))
    pieces: list[str] = []
    text = call.input_json
    while text:
        size = rng.randint(1, 10)  # split anywhere: mid-key, mid-string, mid-escape
        pieces.append(text[:size])
        text = text[size:]
    return Block("tool_use", tuple(pieces), tool_id=tool_id, name=call.name, raw=call.raw)


def _limit(blocks: list[Block], body: dict[str, Any]) -> Reply:
    """Apply stop_sequences (text only), then max_tokens, then pick the stop reason."""
    sequences = body.get("stop_sequences") or []
    for index, block in enumerate(blocks):
        hit = _first_stop(block.content, sequences) if block.type == "text" else None
        if hit is not None:
            cut, sequence = hit
            kept = [*blocks[:index], replace(block, pieces=tuple(tokenize(block.content[:cut])))]
            return Reply(tuple(b for b in kept if b.pieces), "stop_sequence", sequence)
    budget = int(body.get("max_tokens", 0))
    kept = []
    for block in blocks:
        if len(block.pieces) > budget:
            if budget > 0:
                kept.append(_cut(block, budget))
            return Reply(tuple(kept), "max_tokens")
        kept.append(block)
        budget -= len(block.pieces)
    reason = "tool_use" if any(block.type == "tool_use" for block in kept) else "end_turn"
    return Reply(tuple(kept), reason)


def _cut(block: Block, size: int) -> Block:
    pieces = block.pieces[:size]
    if block.type == "thinking":
        return replace(block, pieces=pieces, signature=sign_thinking("".join(pieces)))
    return replace(block, pieces=pieces)


def _first_stop(text: str, sequences: list[str]) -> tuple[int, str] | None:
    hits = [(text.find(seq), seq) for seq in sequences if seq and seq in text]
    return min(hits) if hits else None
